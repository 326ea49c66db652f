"""The builder page in headless Chromium: presets, a byte-exact preview, downloads, errors."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip(
        "browser tests need /usr/bin/chromium and /usr/bin/chromedriver (apt install chromium"
        " chromium-driver)",
        allow_module_level=True,
    )
pytest.importorskip("selenium", reason="browser tests need selenium (pip install selenium)")
uvicorn = pytest.importorskip("uvicorn")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from rl_verifier.web.app import available_presets, create_app  # noqa: E402

MODEL = "rlv/tiny-chat"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = uvicorn.Server(
        uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    browser.set_script_timeout(20)
    yield browser
    browser.quit()


def load(driver: Any, base_url: str) -> None:
    driver.get(base_url + "/")
    settle(driver)


def settle(driver: Any) -> str:
    """Wait for the pending preview request to finish; return ok or error."""
    time.sleep(0.25)  # past the 150 ms debounce
    WebDriverWait(driver, 10).until(
        lambda d: d.execute_script("return document.body.dataset.state") in ("ok", "error")
    )
    state: str = driver.execute_script("return document.body.dataset.state")
    return state


def set_field(driver: Any, field: str, value: str) -> None:
    element = driver.find_element(By.ID, field)
    element.clear()
    element.send_keys(value)


def rlv_new(tmp: Path, form: dict[str, Any]) -> tuple[bytes, bytes]:
    """Run the real ``rlv new`` and return the script and config bytes."""
    flags = {
        "group_size": "--group-size",
        "groups_per_step": "--groups-per-step",
        "max_turns": "--max-turns",
    }
    args = [str(Path(sys.executable).with_name("rlv")), "new"]
    for key, value in form.items():
        if value is True:
            args.append(f"--{key}")
        elif value is not None and value != "":
            args += [flags.get(key, f"--{key}"), str(value)]
    subprocess.run(args, cwd=tmp, check=True, capture_output=True, text=True)
    script = next(tmp.glob("train_*.py"))
    config = script.with_suffix(".toml")
    return script.read_bytes(), config.read_bytes() if config.exists() else b""


PRESETS = available_presets()


@pytest.mark.parametrize(
    "index", range(len(PRESETS)), ids=[p["values"]["verifier"] for p in PRESETS]
)
def test_preset_preview_and_download_match_rlv_new(
    driver: Any, base_url: str, tmp_path: Path, index: int
) -> None:
    load(driver, base_url)
    driver.find_element(By.ID, f"preset-{index}").click()
    settle(driver)
    set_field(driver, "model", MODEL)
    set_field(driver, "steps", "7")
    assert settle(driver) == "ok"
    preview = driver.find_element(By.ID, "preview")
    script_text = driver.execute_script("return arguments[0].textContent", preview)
    driver.find_element(By.ID, "tab-config").click()
    config_text = driver.execute_script("return arguments[0].textContent", preview)
    form = driver.execute_script("return window.rlvBuilder.form()")
    script, config = rlv_new(tmp_path, form)
    assert script_text.encode() == script
    assert config_text.encode() == config
    for kind, expected in (("script", script), ("config", config)):
        got = driver.execute_async_script(
            "const done = arguments[1];"
            "window.rlvBuilder.download(arguments[0]).then((r) => done(r));",
            kind,
        )
        assert got["text"].encode() == expected
        assert got["name"] == (
            "train_"
            + PRESETS[index]["values"]["verifier"]
            + (".py" if kind == "script" else ".toml")
        )


def test_standalone_switch_previews_and_downloads_exactly_rlv_new_standalone(
    driver: Any, base_url: str, tmp_path: Path
) -> None:
    load(driver, base_url)
    [index] = [i for i, p in enumerate(PRESETS) if p["values"]["verifier"] == "calibration"]
    driver.find_element(By.ID, f"preset-{index}").click()
    settle(driver)
    set_field(driver, "model", MODEL)
    driver.find_element(By.ID, "standalone").click()
    assert settle(driver) == "ok"
    assert not driver.find_element(By.ID, "tab-config").is_displayed()
    assert not driver.find_element(By.ID, "dl-config").is_displayed()
    preview = driver.find_element(By.ID, "preview")
    script_text = driver.execute_script("return arguments[0].textContent", preview)
    form = driver.execute_script("return window.rlvBuilder.form()")
    assert form["standalone"] is True
    script, config = rlv_new(tmp_path, form)
    assert config == b""  # one file, no TOML
    assert script_text.encode() == script
    assert b"forward_backward" in script and b"load_config" not in script
    got = driver.execute_async_script(
        "const done = arguments[1];window.rlvBuilder.download(arguments[0]).then((r) => done(r));",
        "script",
    )
    assert got["text"].encode() == script
    assert got["name"] == "train_calibration.py"
    driver.find_element(By.ID, "standalone").click()  # off again: the TOML pair is back
    assert settle(driver) == "ok"
    assert driver.find_element(By.ID, "tab-config").is_displayed()
    assert "load_config" in driver.execute_script("return arguments[0].textContent", preview)


def test_rank_zero_shows_inline_error_and_screenshot(
    driver: Any, base_url: str, tmp_path: Path
) -> None:
    load(driver, base_url)
    assert driver.find_element(By.ID, "preview").text.startswith('"""')
    set_field(driver, "rank", "0")
    assert settle(driver) == "error"
    assert driver.find_element(By.ID, "err-rank").text == "must be at least 1"
    driver.save_screenshot(str(tmp_path / "builder-error.png"))
    set_field(driver, "rank", "16")
    set_field(driver, "model", "Qwen/Qwen3-8Bx")
    assert settle(driver) == "ok"
    assert driver.find_element(By.ID, "err-rank").text == ""
    assert "did you mean" in driver.find_element(By.ID, "warn-model").text
    shot = tmp_path / "builder.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 1000
    artifacts = os.environ.get("RLV_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        for name in ("builder.png", "builder-error.png"):
            shutil.copy(tmp_path / name, Path(artifacts) / name)


def test_wrong_type_shows_inline_error(driver: Any, base_url: str) -> None:
    load(driver, base_url)
    set_field(driver, "learning_rate", "fast")
    assert settle(driver) == "error"
    assert driver.find_element(By.ID, "err-learning_rate").text == "must be a number"
