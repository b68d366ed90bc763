"""Model profiles ("pro" for answers, "flash" for cheap helper calls) and their settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

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


class LLMSettings(BaseSettings):
    """LLM configuration from the environment (no prefix).

    ``LLM_MODEL`` (e.g. ``openai/NAME``) applies to both profiles; ``LLM_PRO_MODEL`` and
    ``LLM_FLASH_MODEL`` override it per profile.
    """

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    llm_model: str | None = None
    llm_api_base: str | None = None
    llm_api_key: SecretStr | None = None
    llm_pro_model: str | None = None
    llm_flash_model: str | None = None
    llm_timeout_s: float = 60.0
    llm_pro_temperature: float = 0.3
    llm_flash_temperature: float = 0.1
    llm_max_tokens: int | None = None

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
