"""Model profiles ("pro" for answers, "flash" for cheap helper calls) and their settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from weir_common.settings import LayeredSettings

ProfileName = Literal["pro", "flash"]


class ModelProfile(BaseModel):
    """Everything needed to call one model through litellm."""

    model: str | None = None
    api_base: str | None = None
    api_key: SecretStr | None = None
    temperature: float = 0.3
    timeout_s: float = 60.0
    max_tokens: int | None = None

    @property
    def configured(self) -> bool:
        """True when a model name is set."""
        return bool(self.model)


class LLMSettings(LayeredSettings):
    """LLM configuration: defaults < TOML (top level, the running service's table) < env.

    ``LLM_MODEL`` (e.g. ``openai/NAME``) applies to both profiles; ``LLM_PRO_MODEL`` and
    ``LLM_FLASH_MODEL`` override it per profile.
    """

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    llm_model: str | None = Field(
        default=None, description="litellm model of both profiles (unset: offline responder)."
    )
    llm_api_base: str | None = Field(default=None, description="OpenAI-compatible endpoint.")
    llm_api_key: SecretStr | None = Field(default=None, description="The endpoint's API key.")
    llm_pro_model: str | None = Field(default=None, description="Model of answers (PRO).")
    llm_flash_model: str | None = Field(
        default=None, description="Model of cheap helper calls (FLASH)."
    )
    llm_timeout_s: float = Field(default=60.0, description="Limit of one model call.")
    llm_pro_temperature: float = Field(default=0.3, description="Temperature of PRO calls.")
    llm_flash_temperature: float = Field(default=0.1, description="Temperature of FLASH calls.")
    llm_max_tokens: int | None = Field(default=None, description="Most tokens of one answer.")

    def profile(self, name: ProfileName) -> ModelProfile:
        """Resolve the named profile; ``model`` is None when nothing is configured."""
        if name == "pro":
            model = self.llm_pro_model or self.llm_model
            temperature = self.llm_pro_temperature
        elif name == "flash":
            model = self.llm_flash_model or self.llm_model
            temperature = self.llm_flash_temperature
        else:  # pragma: no cover - guarded by the Literal type
            raise ValueError(f"unknown profile {name!r}")
        return ModelProfile(
            model=model or None,
            api_base=self.llm_api_base or None,
            api_key=self.llm_api_key,
            temperature=temperature,
            timeout_s=self.llm_timeout_s,
            max_tokens=self.llm_max_tokens,
        )

    @property
    def configured(self) -> bool:
        """True when at least the "pro" profile has a model."""
        return self.profile("pro").configured
