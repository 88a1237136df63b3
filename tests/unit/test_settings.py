import pytest

from advisor.config.settings import SettingsError, load_settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for key in ("ZFS_ADVISOR_CONFIG", "ZFS_ADVISOR_PORT", "ZFS_ADVISOR_ROOT", "ZFS_ADVISOR_LOG_LEVEL"):
        monkeypatch.delenv(key, raising=False)


def test_embedded_defaults_listen_on_loopback_21134(monkeypatch, tmp_path):
    monkeypatch.setattr("advisor.config.settings.DEFAULT_CONFIG_FILE", tmp_path / "absent.toml")
    s = load_settings()
    assert (s.listen_address, s.port, s.root) == ("127.0.0.1", 21134, "/")
    assert s.api_token is None


def test_precedence_file_then_env_then_cli(monkeypatch, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('port = 9200\nlog_level = "debug"\nroot = "/srv/snap"\n')
    assert load_settings(cfg).port == 9200
    monkeypatch.setenv("ZFS_ADVISOR_PORT", "9300")
    s = load_settings(cfg)
    assert (s.port, s.log_level, s.root) == (9300, "debug", "/srv/snap")
    assert load_settings(cfg, port=9400).port == 9400
    monkeypatch.setenv("ZFS_ADVISOR_CONFIG", str(cfg))
    assert load_settings().log_level == "debug"


@pytest.mark.parametrize(
    "content, message",
    [
        ("port = 0\n", "port"),
        ("port = 'abc'\n", "port"),
        ("prot = 21134\n", "prot"),  # a typo is an error, not a silent default
        ("log_level = 'loud'\n", "log_level"),
        ("port = [\n", "cannot read"),
        ("state_dir = ''\n", "state_dir: Value error, is empty, which would mean the current directory"),
        ("state_dir = '  '\n", "state_dir: Value error, is empty"),
    ],
)
def test_bad_settings_are_clear_errors(tmp_path, content, message):
    cfg = tmp_path / "c.toml"
    cfg.write_text(content)
    with pytest.raises(SettingsError, match=message):
        load_settings(cfg)


def test_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


def test_unknown_environment_variable_is_an_error(monkeypatch, tmp_path):
    """A typo in the environment (ZFS_ADVISOR_API_TOKNE) must not leave the token unset silently."""
    monkeypatch.setattr("advisor.config.settings.DEFAULT_CONFIG_FILE", tmp_path / "absent.toml")
    monkeypatch.setenv("ZFS_ADVISOR_API_TOKNE", "s3cret")
    with pytest.raises(SettingsError, match="ZFS_ADVISOR_API_TOKNE.*ZFS_ADVISOR_API_TOKEN"):
        load_settings()
    monkeypatch.delenv("ZFS_ADVISOR_API_TOKNE")
    monkeypatch.setenv("zfs_advisor_api_token", "s3cret")  # names are case-insensitive, as pydantic reads them
    monkeypatch.setenv("ZFS_ADVISOR_LAB_ZFS", "2.3")  # the lab tier's own variables are not settings
    assert load_settings().api_token.get_secret_value() == "s3cret"


@pytest.mark.parametrize("token, message", [
    ("", "api_token is empty"),
    ("s3cret-token ", "whitespace \\(at position 13 of 13\\)"),
    ("s3cret token", "whitespace \\(at position 7 of 12\\)"),
    ("\ts3cret", "whitespace \\(at position 1 of 7\\)"),
    ("s3cr\u00e9t", "a character a bearer token cannot carry"),
    ("ab=cd", "a character a bearer token cannot carry"),
])
@pytest.mark.parametrize("where", ["file", "environment"])
def test_an_unusable_api_token_stops_start_up_in_one_line(monkeypatch, tmp_path, token, message, where):
    """An empty token matched `Authorization: Bearer` with nothing after it; one with whitespace
    matched nobody (clients' headers lose it). Either is refused, and the reason never shows it."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('listen_address = "0.0.0.0"\n')
    if where == "file":
        cfg.write_text(cfg.read_text() + f"api_token = {token!r}\n".replace("'", '"').replace("\t", "\\t"))
    else:
        monkeypatch.setenv("ZFS_ADVISOR_API_TOKEN", token)
    with pytest.raises(SettingsError, match=message) as info:
        load_settings(cfg)
    assert "\n" not in str(info.value) and (not token.strip() or token.strip() not in str(info.value))


@pytest.mark.parametrize("token", ["s3cret-token", "abc.DEF_~+/123==", "0" * 64])
def test_bearer_tokens_of_rfc_6750_are_accepted(tmp_path, token):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'listen_address = "0.0.0.0"\napi_token = "{token}"\n')
    assert load_settings(cfg).api_token.get_secret_value() == token
