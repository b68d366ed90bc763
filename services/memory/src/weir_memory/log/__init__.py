"""The turn log (issue 16): every non-private turn kept as an episodic record and searched
by meaning (the chats' vectors) and by words (BM25), fused with RRF."""
