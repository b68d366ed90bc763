"""The intent classifier's rules as data: a TOML table (`intent_rules.toml`), its schema and
loader (`table`), and the compiled term matchers (`matcher`); `weir_router.intent` applies them."""
