"""The deployment files agree with the code: docker-compose.yml, deploy/docker, deploy/k8s.

Nothing here runs a container (there is no Docker engine on the project's machines). The files
are parsed and checked against the code they deploy: the services of the launcher, the
modules the commands name, and the settings fields each service really reads, plus the
official Compose schema and the Kubernetes API schemas.
"""

from __future__ import annotations

import fnmatch
import importlib.resources
import importlib.util
import json
import re
import shlex
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from weir_common.embeddings import EmbeddingSettings
from weir_common.llm import LLMSettings
from weir_common.settings import WeirSettings
from weir_deploy.services import DEFAULT_SERVICES
from weir_gateway.memory_api import MemoryApiSettings
from weir_gateway.settings import GatewaySettings
from weir_harness.settings import HarnessSettings
from weir_memory.settings import MemorySettings
from weir_rag.index.factory import IndexSettings
from weir_rag.settings import RagSettings
from weir_router.settings import RouterSettings
from weir_tools.settings import ToolsSettings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy/docker/Dockerfile"
DOCKERIGNORE = ROOT / "deploy/docker/Dockerfile.dockerignore"
K8S = ROOT / "deploy/k8s"
K8S_VERSION = "1.30.0"  # the oldest Kubernetes release the manifests are checked against

# Every settings class a service builds from the environment: its own, and the shared ones
# it instantiates (the gateway's memory API, rag's index factory, the LLM and embedder
# factories of weir_common used by router, memory and rag).
SETTINGS: dict[str, tuple[type[BaseSettings], ...]] = {
    "gateway": (GatewaySettings, MemoryApiSettings),
    "harness": (HarnessSettings,),
    "router": (RouterSettings, LLMSettings, EmbeddingSettings),
    "memory": (MemorySettings, LLMSettings, EmbeddingSettings),
    "rag": (RagSettings, IndexSettings, LLMSettings, EmbeddingSettings),
    "tools": (ToolsSettings,),
}
# variables of the image that are Python's own, not weir settings
RUNTIME_ENV = {"PATH", "PYTHONUNBUFFERED"}


def env_names(cls: type[BaseSettings]) -> set[str]:
    """The environment variables a settings class reads (pydantic-settings' own mapping:
    an alias replaces prefix + field name; names are case-insensitive)."""
    prefix = str(cls.model_config.get("env_prefix", ""))
    names: set[str] = set()
    for name, info in cls.model_fields.items():
        alias = info.validation_alias or info.alias
        if isinstance(alias, str):
            names.add(alias.upper())
        elif isinstance(alias, AliasChoices):
            names |= {choice.upper() for choice in alias.choices if isinstance(choice, str)}
        else:
            names.add(f"{prefix}{name}".upper())
    return names


def allowed_env(service: str) -> set[str]:
    """Every variable `service` reads."""
    return set().union(*(env_names(cls) for cls in SETTINGS[service]))


def build_settings(service: str, env: Mapping[str, str], tmp_path: Path) -> None:
    """Instantiate every settings class of `service` from exactly `env` (values must parse)."""
    with pytest.MonkeyPatch.context() as mp:
        for name in allowed_env(service):
            mp.delenv(name, raising=False)
        mp.setenv("WEIR_CONFIG", str(tmp_path / "no-weir.toml"))
        for name, value in env.items():
            mp.setenv(name, value)
        for cls in SETTINGS[service]:
            cls()


def module_runs(argv: list[str]) -> bool:
    """True for `python -m weir_<name>` where the module has a `__main__`."""
    if len(argv) != 3 or argv[:2] != ["python", "-m"]:
        return False
    return importlib.util.find_spec(f"{argv[2]}.__main__") is not None


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_settings_map_names_each_service_own_settings_first() -> None:
    assert set(SETTINGS) == set(DEFAULT_SERVICES)
    for name, (own, *_) in SETTINGS.items():
        assert issubclass(own, WeirSettings)
        assert own.service_name == name
        assert own.__module__ == f"weir_{name}.settings"


def test_env_names_follow_pydantic_settings(tmp_path: Path) -> None:
    assert {"KAFKA_BOOTSTRAP_SERVERS", "SERVICE_PORT", "DATA_DIR"} <= env_names(WeirSettings)
    assert {"WEIR_MEMORY_URL", "WEIR_RAG_URL", "AUTH_TOKENS"} <= allowed_env("gateway")
    assert "LLM_MODEL" not in allowed_env("gateway")
    assert {"LLM_MODEL", "EMBEDDING_MODEL", "LEXICAL_BACKEND", "ES_URL"} <= allowed_env("rag")
    build_settings("harness", {"RAG_CONNECTED": "true"}, tmp_path)
    with pytest.raises(ValueError, match="rag_connected"):
        build_settings("harness", {"RAG_CONNECTED": "maybe"}, tmp_path)


# --- the Dockerfile ---------------------------------------------------------------------


@dataclass
class Stage:
    """One build stage: its base, name and instructions (keyword, arguments)."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [arg for kw, arg in self.instructions if kw == keyword]


def dockerfile_stages() -> list[Stage]:
    """The stages of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stages: list[Stage] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, rest = stripped.partition(" ")
        keyword, rest = keyword.upper(), " ".join(rest.split())
        if keyword == "FROM":
            words = rest.split()
            stages.append(Stage(words[0], words[2] if len(words) == 3 else None))
        else:
            stages[-1].instructions.append((keyword, rest))
    return stages


def stage_env(stage: Stage) -> dict[str, str]:
    env: dict[str, str] = {}
    for arg in stage.args("ENV"):
        for item in shlex.split(arg):
            name, _, value = item.partition("=")
            env[name] = value
    return env


def service_stage() -> Stage:
    """The stage the services run in (the default target builds from it)."""
    stages = dockerfile_stages()
    (stage,) = (s for s in stages if s.name == "service")
    assert stages[-1].base == "service", "the default target is not the `service` stage"
    return stage


def image_env() -> dict[str, str]:
    return stage_env(service_stage())


def test_dockerfile_builds_the_locked_workspace_on_python_slim() -> None:
    stages = dockerfile_stages()
    python_stages = [s for s in stages if s.base.startswith("python:")]
    assert {s.base for s in python_stages} == {"python:3.11-slim"}
    syncs = [arg for s in stages for arg in s.args("RUN") if "uv sync" in arg]
    assert syncs
    for command in syncs:
        assert {"--all-packages", "--frozen", "--no-dev"} <= set(command.split()), command


def test_dockerfile_copies_every_workspace_member() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    members = [
        path.relative_to(ROOT).as_posix()
        for pattern in root["tool"]["uv"]["workspace"]["members"]
        for path in sorted(ROOT.glob(pattern))
    ]
    assert len(members) == len(DEFAULT_SERVICES) + 2  # common + deploy + one per service
    copied = {arg.split()[0] for s in dockerfile_stages() for arg in s.args("COPY")}
    for member in members:
        assert f"{member}/pyproject.toml" in copied
        assert f"{member}/src" in copied


def test_dockerfile_copies_only_what_exists_and_is_in_the_context() -> None:
    keep = [line[1:] for line in DOCKERIGNORE.read_text().splitlines() if line.startswith("!")]
    for stage in dockerfile_stages():
        for arg in stage.args("COPY"):
            words = [w for w in arg.split() if not w.startswith("--")]
            if "--from=" in arg:
                continue
            for source in words[:-1]:
                assert (ROOT / source).exists(), source
                assert any(fnmatch.fnmatch(source, pattern) for pattern in keep), source


def test_image_runs_a_real_module_as_an_unprivileged_user() -> None:
    stage = service_stage()
    (user,) = stage.args("USER")
    uid = user.split(":")[0]
    assert uid.isdigit()
    assert int(uid) != 0  # numeric, so Kubernetes' runAsNonRoot can verify it
    (cmd,) = stage.args("CMD")
    assert module_runs(json.loads(cmd))
    (check,) = stage.args("HEALTHCHECK")
    script = json.loads(check.split("CMD", 1)[1])[-1]
    assert f"deploy/docker/ready.py {script}" in stage.args("COPY")


def test_image_env_names_are_settings_every_service_reads() -> None:
    shared = env_names(WeirSettings)
    for name in image_env().keys() - RUNTIME_ENV:
        assert name in shared, f"{name} is not a setting of every service"


def test_ready_script_reads_the_body() -> None:
    spec = importlib.util.spec_from_file_location("ready", ROOT / "deploy/docker/ready.py")
    assert spec is not None
    assert spec.loader is not None
    ready = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ready)
    assert ready.ready(b'{"ready": true}') is True
    assert ready.ready(b'{"ready": false}') is False
    assert ready.ready(b"<html>") is False


# --- docker-compose.yml -----------------------------------------------------------------

INTERPOLATION = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")
# `${VAR:?message}`: Compose refuses to start without VAR
REQUIRED = re.compile(r"\$\{(\w+):?\?[^}]*\}")
TOKEN = "WEIR_SERVICE_TOKEN"


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def interpolate(value: object) -> str:
    """A value as Compose passes it with none of the referenced variables set (the required
    ones set to `set-by-the-operator`)."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    text = REQUIRED.sub("set-by-the-operator", text)
    text = INTERPOLATION.sub(lambda m: m.group(2) or "", text)
    assert "${" not in text, f"interpolation this test does not understand: {value}"
    return text.replace("$$", "$")


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    """The variables a container gets; a key without a value is unset unless in the shell."""
    env = service.get("environment", {})
    assert isinstance(env, dict), "environment as a mapping, please"
    return {name: interpolate(value) for name, value in env.items() if value is not None}


def weir_services() -> Iterator[tuple[str, dict[str, Any]]]:
    services = compose()["services"]
    for name in DEFAULT_SERVICES:
        assert name in services, f"no compose service for {name}"
        yield name, services[name]


def test_compose_file_follows_the_compose_specification() -> None:
    schema_file = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads(schema_file.joinpath("compose-spec.json").read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(compose())


def test_compose_runs_every_service_from_the_one_image() -> None:
    images = set()
    for name, service in weir_services():
        assert service["command"] == ["python", "-m", f"weir_{name}"]
        assert module_runs(service["command"])
        assert (ROOT / service["build"]["context"] / service["build"]["dockerfile"]) == DOCKERFILE
        assert service["build"]["target"] in {s.name for s in dockerfile_stages()}
        images.add(service["image"])
    assert len(images) == 1


def test_compose_gives_each_service_only_its_own_settings(tmp_path: Path) -> None:
    for name, service in weir_services():
        env = compose_env(service)
        unknown = set(service.get("environment", {})) - allowed_env(name)
        assert not unknown, f"{name} does not read {sorted(unknown)}"
        build_settings(name, {**image_env(), **env}, tmp_path)


def test_compose_services_are_healthy_only_when_ready() -> None:
    stage = service_stage()
    for name, service in weir_services():
        test = service["healthcheck"]["test"]
        assert test[0] == "CMD"
        assert f"deploy/docker/ready.py {test[-1]}" in stage.args("COPY"), name


def test_compose_dependencies_exist_and_can_become_healthy() -> None:
    services = compose()["services"]
    for name, service in services.items():
        for target, how in service.get("depends_on", {}).items():
            assert target in services, f"{name} depends on unknown {target}"
            assert how["condition"] in {
                "service_started",
                "service_healthy",
                "service_completed_successfully",
            }
            if how["condition"] == "service_healthy":
                assert "healthcheck" in services[target], f"{target} has no healthcheck"
            if how["condition"] == "service_completed_successfully":
                assert services[target].get("restart") in {None, "no", "on-failure"}, target


def test_compose_urls_name_services_started_before() -> None:
    services = compose()["services"]
    port = int(image_env()["SERVICE_PORT"])
    for name, service in weir_services():
        for var, value in compose_env(service).items():
            if "://" in value:
                urls = [urlsplit(value)]
            elif var == "KAFKA_BOOTSTRAP_SERVERS":
                urls = [urlsplit(f"//{host}") for host in value.split(",")]
            else:
                continue
            for url in urls:
                assert url.hostname in services, f"{name}: {var}={value}"
                assert url.hostname in service["depends_on"], f"{name}: {var}={value}"
                if url.hostname in DEFAULT_SERVICES:
                    assert url.port == port, f"{name}: {var}={value}"


def test_compose_requires_the_service_credential_for_every_service() -> None:
    for name, service in weir_services():
        value = str(service["environment"].get(TOKEN))
        match = REQUIRED.fullmatch(value)
        assert match is not None, f"{name}: {TOKEN} must be `${{{TOKEN}:?...}}`, not {value!r}"
        assert match.group(1) == TOKEN, f"{name}: {value}"


# --- the broker: SASL/SCRAM, one principal per service, ACLs ------------------------------

BROKER_USERS = ("admin", *DEFAULT_SERVICES)


def sasl_password_variable(value: object) -> str | None:
    """The required Compose variable a value is (`${VAR:?...}`), else None."""
    match = REQUIRED.fullmatch(str(value))
    return match.group(1) if match else None


def test_compose_gives_each_service_its_own_broker_principal() -> None:
    variables = set()
    for name, service in weir_services():
        env = compose_env(service)
        assert env["KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT", name
        assert env["KAFKA_SASL_MECHANISM"] == "SCRAM-SHA-512", name
        assert env["KAFKA_SASL_USERNAME"] == name
        variable = sasl_password_variable(service["environment"]["KAFKA_SASL_PASSWORD"])
        assert variable == f"KAFKA_PASSWORD_{name.upper()}", name
        variables.add(variable)
    assert len(variables) == len(DEFAULT_SERVICES)


def test_compose_broker_wants_scram_and_authorizes() -> None:
    kafka = compose()["services"]["kafka"]
    env = {k: interpolate(v) for k, v in kafka["environment"].items()}
    protocols = dict(p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    for listener in env["KAFKA_ADVERTISED_LISTENERS"].split(","):
        assert protocols[listener.split("://")[0]] == "SASL_PLAINTEXT", listener
    for listener in env["KAFKA_LISTENERS"].split(","):
        name, address = listener.split("://")
        if protocols[name] == "PLAINTEXT":  # only the controller, and only on loopback
            assert name == env["KAFKA_CONTROLLER_LISTENER_NAMES"]
            assert address.startswith("127.0.0.1:"), listener
    assert env["KAFKA_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512"
    assert env["KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL"] == "SCRAM-SHA-512"
    assert protocols[env["KAFKA_INTER_BROKER_LISTENER_NAME"]] == "SASL_PLAINTEXT"
    assert env["KAFKA_AUTHORIZER_CLASS_NAME"].endswith(".StandardAuthorizer")
    assert "User:admin" in env["KAFKA_SUPER_USERS"].split(";")
    assert env["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
    # every principal's SCRAM user is made at format time, its password a required variable
    script = kafka["command"][-1]
    assert "kafka-storage.sh format" in script
    assert "--add-scram" in script
    assert "exec /etc/kafka/docker/run" in script
    assert f"for name in {' '.join(BROKER_USERS)}; do" in script
    for user in BROKER_USERS:
        variable = sasl_password_variable(kafka["environment"][f"SCRAM_PASSWORD_{user.upper()}"])
        assert variable == f"KAFKA_PASSWORD_{user.upper()}", user
    assert "--command-config" in kafka["healthcheck"]["test"][-1]


def test_compose_applies_the_acls_before_any_service_starts() -> None:
    services = compose()["services"]
    acls = services["kafka-acls"]
    assert acls["command"] == ["python", "-m", "weir_deploy", "kafka-acls"]
    assert module_runs(acls["command"][:3])
    env = compose_env(acls)
    assert env["KAFKA_SASL_USERNAME"] == "admin"
    assert sasl_password_variable(acls["environment"]["KAFKA_SASL_PASSWORD"]) == (
        "KAFKA_PASSWORD_ADMIN"
    )
    assert acls["depends_on"]["kafka"]["condition"] == "service_healthy"
    for name, service in weir_services():
        how = service["depends_on"]["kafka-acls"]["condition"]
        assert how == "service_completed_successfully", name


def test_compose_gateway_reaches_the_harness() -> None:
    env = compose_env(compose()["services"]["gateway"])
    assert urlsplit(env["WEIR_HARNESS_URL"]).hostname == "harness"


def test_compose_gateway_believes_only_bearer_tokens() -> None:
    env = compose_env(compose()["services"]["gateway"])
    assert env["AUTH_MODE"] == "token"
    assert not any(k.startswith("TRUST_") or k == "AUTH_PROXY_TRUSTED" for k in env)


def test_compose_publishes_the_gateway() -> None:
    (mapping,) = compose()["services"]["gateway"]["ports"]
    assert interpolate(mapping).split(":")[-1] == image_env()["SERVICE_PORT"]


def test_compose_shares_uploads_between_gateway_and_rag() -> None:
    services = compose()["services"]
    mounts = []
    for name in ("gateway", "rag"):
        data_dir = {**image_env(), **compose_env(services[name])}["DATA_DIR"]
        (volume,) = [v for v in services[name]["volumes"] if v.endswith(f":{data_dir}")]
        mounts.append(volume)
    assert mounts[0] == mounts[1]
    assert mounts[0].split(":")[0] in compose()["volumes"]


def test_compose_bind_mounts_exist_and_collector_listens_where_spans_go() -> None:
    services = compose()["services"]
    for service in services.values():
        for volume in service.get("volumes", []):
            if volume.startswith("."):
                assert (ROOT / volume.split(":")[0]).is_file(), volume
    (mount,) = services["otel-collector"]["volumes"]
    config = yaml.safe_load((ROOT / mount.split(":")[0]).read_text())
    http = config["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    for _, service in weir_services():
        endpoint = urlsplit(compose_env(service)["OTEL_EXPORTER_OTLP_ENDPOINT"])
        assert endpoint.hostname == "otel-collector"
        assert str(endpoint.port) == http.rsplit(":", 1)[1]
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            assert set(pipeline.get(kind, [])) <= set(config.get(kind, {})), kind


# --- deploy/k8s -------------------------------------------------------------------------


def kustomization() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return data


def k8s_docs() -> list[dict[str, Any]]:
    """What `kubectl apply -k` applies, then the example secret."""
    docs = [doc for path in kustomization()["resources"] for doc in load_yaml_docs(K8S / path)]
    return docs + load_yaml_docs(K8S / "secret.example.yaml")


def k8s_named(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in k8s_docs() if d["kind"] == kind}


def k8s_data(kind: str, name: str) -> dict[str, str]:
    doc = k8s_named(kind)[name]
    data: dict[str, str] = doc.get("data", {}) | doc.get("stringData", {})
    return data


def container_env(container: dict[str, Any]) -> dict[str, str]:
    """The variables a container gets, resolved from the ConfigMaps and Secret here."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env |= k8s_data("ConfigMap", source["configMapRef"]["name"])
        else:
            env |= k8s_data("Secret", source["secretRef"]["name"])
    for item in container.get("env", []):
        ref = item.get("valueFrom", {"value": item.get("value")})
        if "configMapKeyRef" in ref:
            key = ref["configMapKeyRef"]
            env[item["name"]] = k8s_data("ConfigMap", key["name"])[key["key"]]
        elif "secretKeyRef" in ref:
            key = ref["secretKeyRef"]
            env[item["name"]] = k8s_data("Secret", key["name"])[key["key"]]
        elif "fieldRef" in ref:
            env[item["name"]] = "weir-pod-0"
        else:
            env[item["name"]] = str(ref["value"])
    return env


def deployment(name: str) -> dict[str, Any]:
    deployments = k8s_named("Deployment")
    assert f"weir-{name}" in deployments, f"no Deployment for {name}"
    return deployments[f"weir-{name}"]


def only_container(name: str) -> dict[str, Any]:
    (container,) = deployment(name)["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def test_compose_prometheus_scrapes_every_service_with_the_credential() -> None:
    services = compose()["services"]
    prometheus = services["prometheus"]
    (mount,) = prometheus["volumes"]
    config = yaml.safe_load((ROOT / mount.split(":")[0]).read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "weir"]
    port = image_env()["SERVICE_PORT"]
    targets = {t for group in job["static_configs"] for t in group["targets"]}
    assert targets == {f"{name}:{port}" for name, _ in weir_services()}
    assert job["metrics_path"] == "/metrics"
    secret = job["authorization"]["credentials_file"].rsplit("/", 1)[1]
    assert prometheus["secrets"] == [secret]
    assert compose()["secrets"][secret] == {"environment": TOKEN}


def test_compose_collector_sends_traces_to_jaeger() -> None:
    services = compose()["services"]
    (mount,) = services["otel-collector"]["volumes"]
    config = yaml.safe_load((ROOT / mount.split(":")[0]).read_text())
    endpoint = urlsplit(config["exporters"]["otlphttp/jaeger"]["endpoint"])
    assert endpoint.hostname in services
    assert endpoint.port == 4318  # Jaeger v2's OTLP/HTTP receiver
    assert "otlphttp/jaeger" in config["service"]["pipelines"]["traces"]["exporters"]
    assert services["jaeger"]["image"].startswith("jaegertracing/jaeger:2")


def test_kustomization_lists_every_manifest() -> None:
    listed = set(kustomization()["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == {name for name in on_disk if not name.endswith(".example.yaml")}


def test_k8s_manifests_follow_the_kubernetes_api() -> None:
    for doc in k8s_docs():
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_k8s_runs_every_service_from_the_one_image() -> None:
    (image,) = kustomization()["images"]
    for name in DEFAULT_SERVICES:
        container = only_container(name)
        assert container["image"] == image["name"]
        assert container["command"] == ["python", "-m", f"weir_{name}"]
        assert module_runs(container["command"])


def test_k8s_gives_each_service_only_its_own_settings(tmp_path: Path) -> None:
    for name in DEFAULT_SERVICES:
        env = container_env(only_container(name))
        unknown = env.keys() - allowed_env(name)
        assert not unknown, f"{name} does not read {sorted(unknown)}"
        build_settings(name, {**image_env(), **env}, tmp_path)


def test_k8s_services_reach_their_pods() -> None:
    services = k8s_named("Service")
    port = int(image_env()["SERVICE_PORT"])
    for name in DEFAULT_SERVICES:
        spec = deployment(name)["spec"]
        labels = spec["template"]["metadata"]["labels"]
        assert spec["selector"]["matchLabels"].items() <= labels.items()
        service = services[f"weir-{name}"]["spec"]
        assert service["selector"].items() <= labels.items()
        container = only_container(name)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports == {"http": port}
        assert {p["targetPort"] for p in service["ports"]} <= ports.keys()
        for probe in ("startupProbe", "livenessProbe"):
            assert container[probe]["httpGet"]["port"] in ports
        assert container["readinessProbe"]["exec"]["command"][:1] == ["python"]


def test_k8s_urls_name_k8s_services() -> None:
    services = k8s_named("Service")
    for name in DEFAULT_SERVICES:
        for item in only_container(name).get("env", []):
            if "://" not in str(item.get("value", "")):
                continue
            url = urlsplit(item["value"])
            assert url.hostname in services, f"{name}: {item}"
            ports = {p["port"] for p in services[url.hostname]["spec"]["ports"]}
            assert url.port in ports, f"{name}: {item}"


def test_k8s_shares_uploads_between_gateway_and_rag() -> None:
    claims = []
    for name in ("gateway", "rag"):
        pod = deployment(name)["spec"]["template"]["spec"]
        data_dir = {**image_env(), **container_env(only_container(name))}["DATA_DIR"]
        (mount,) = [m for m in only_container(name)["volumeMounts"] if m["mountPath"] == data_dir]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        claims.append(volume["persistentVolumeClaim"]["claimName"])
    assert claims[0] == claims[1]
    assert claims[0] in k8s_named("PersistentVolumeClaim")


def test_k8s_gives_every_service_the_credential_from_the_secret() -> None:
    assert TOKEN in k8s_data("Secret", "weir-secrets"), "secret.example.yaml lacks the key"
    for name in DEFAULT_SERVICES:
        (item,) = [i for i in only_container(name).get("env", []) if i["name"] == TOKEN]
        assert "value" not in item, f"{name}: {TOKEN} is a literal"
        ref = item["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == ("weir-secrets", TOKEN), name
        assert not ref.get("optional", False), f"{name}: {TOKEN} must not be optional"


def test_k8s_gives_each_service_its_own_broker_principal() -> None:
    secret = k8s_data("Secret", "weir-secrets")
    keys = set()
    for name in DEFAULT_SERVICES:
        container = only_container(name)
        env = container_env(container)
        assert env["KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT", name
        assert env["KAFKA_SASL_USERNAME"] == name
        (item,) = [i for i in container["env"] if i["name"] == "KAFKA_SASL_PASSWORD"]
        ref = item["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == ("weir-secrets", f"KAFKA_PASSWORD_{name.upper()}")
        assert not ref.get("optional", False), name
        assert ref["key"] in secret, f"secret.example.yaml lacks {ref['key']}"
        keys.add(ref["key"])
    assert len(keys) == len(DEFAULT_SERVICES)


def test_k8s_job_makes_the_users_and_applies_the_acls_as_admin() -> None:
    job = k8s_named("Job")["weir-kafka-acls"]["spec"]["template"]["spec"]
    (users,) = job["initContainers"]
    script = users["command"][-1]
    assert "kafka-configs.sh" in script
    assert f"for name in {' '.join(DEFAULT_SERVICES)}; do" in script
    assert "SCRAM-SHA-512=[password=" in script
    passwords = {i["name"]: i["valueFrom"]["secretKeyRef"]["key"] for i in users["env"]
                 if "secretKeyRef" in i.get("valueFrom", {})}  # fmt: skip
    assert passwords == {f"KAFKA_PASSWORD_{u.upper()}": f"KAFKA_PASSWORD_{u.upper()}"
                         for u in BROKER_USERS}  # fmt: skip
    (acls,) = job["containers"]
    assert acls["command"] == ["python", "-m", "weir_deploy", "kafka-acls"]
    assert module_runs(acls["command"][:3])
    env = container_env(acls)
    assert env["KAFKA_SASL_USERNAME"] == "admin"
    assert env["KAFKA_SASL_PASSWORD"] == k8s_data("Secret", "weir-secrets")["KAFKA_PASSWORD_ADMIN"]
    assert env["KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT"


def test_k8s_gateway_believes_only_bearer_tokens() -> None:
    env = container_env(only_container("gateway"))
    assert env["AUTH_MODE"] == "token"
    assert "AUTH_PROXY_TRUSTED" not in env
    assert "AUTH_JWT_SECRET" in k8s_data("Secret", "weir-secrets")


def test_k8s_gateway_reaches_the_harness() -> None:
    env = container_env(only_container("gateway"))
    assert urlsplit(env["WEIR_HARNESS_URL"]).hostname == "weir-harness"


# --- deploy/k8s/networkpolicy.yaml ------------------------------------------------------

ANYWHERE = "*"


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector matches `labels` (matchLabels and matchExpressions)."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expr in selector.get("matchExpressions", []):
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        held = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }
        if not held[op]:
            return False
    return True


def pod_labels(name: str) -> dict[str, str]:
    labels: dict[str, str] = deployment(name)["spec"]["template"]["metadata"]["labels"]
    return labels


def admitted(target: str) -> set[str]:
    """Who may open a connection to the pods of `target`: weir service names, or ANYWHERE."""
    sources: set[str] = set()
    for policy in k8s_named("NetworkPolicy").values():
        spec = policy["spec"]
        if "Ingress" not in spec["policyTypes"]:
            continue
        if not selects(spec["podSelector"], pod_labels(target)):
            continue
        for rule in spec.get("ingress", []):
            if "from" not in rule:
                sources.add(ANYWHERE)
            for peer in rule.get("from", []):
                if set(peer) != {"podSelector"}:  # other namespaces or address blocks
                    sources.add(ANYWHERE)
                    continue
                sources |= {
                    name
                    for name in DEFAULT_SERVICES
                    if selects(peer["podSelector"], pod_labels(name))
                }
    return sources


def test_k8s_network_policies_deny_by_default() -> None:
    policies = k8s_named("NetworkPolicy")
    assert "networkpolicy.yaml" in kustomization()["resources"]
    deny = [p["spec"] for p in policies.values() if p["spec"]["podSelector"] == {}]
    assert deny == [{"podSelector": {}, "policyTypes": ["Ingress"]}]


def test_k8s_network_policies_admit_only_the_callers_of_each_service() -> None:
    assert admitted("gateway") == {ANYWHERE}
    assert admitted("memory") == {"gateway"}
    assert admitted("harness") == {"gateway"}
    assert admitted("rag") == {"gateway", "tools"}
    assert admitted("tools") == {"tools", "gateway"}  # "forget me" reaches tools' results
    assert admitted("router") == set()


def test_k8s_network_policies_open_only_the_http_port() -> None:
    for name, policy in k8s_named("NetworkPolicy").items():
        if (
            policy["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name")
            != "weir"
        ):
            continue
        for rule in policy["spec"].get("ingress", []):
            assert rule["ports"] == [{"protocol": "TCP", "port": "http"}], name


def test_k8s_engines_are_reached_only_by_weir_services() -> None:
    engines = {"app.kubernetes.io/part-of": "weir-engines"}
    sources: set[str] = set()
    for policy in k8s_named("NetworkPolicy").values():
        spec = policy["spec"]
        if spec["podSelector"] == {} or not selects(spec["podSelector"], engines):
            continue
        for rule in spec.get("ingress", []):
            assert "from" in rule
            for peer in rule["from"]:
                assert set(peer) == {"podSelector"}
                sources |= {
                    n for n in DEFAULT_SERVICES if selects(peer["podSelector"], pod_labels(n))
                }
    assert sources == set(DEFAULT_SERVICES)
