"""``hf-lineage convert``'s downloads, against an HTTP server on this machine's loopback address: a URL is fetched
once (progress on stderr) into the download cache and read from there afterwards, offline too; a missing file, a
download cut short and an unreachable host are one-line errors naming the URL, and leave nothing behind."""

import http.server
import threading
from pathlib import Path

import pytest

from hf_lineage.convert.releases import convert
from hf_lineage.convert.sources import ConversionError, cached_url_path
from standins_elmo import FIXTURES


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves the ELMo fixtures; ``/cut/NAME`` announces NAME's whole length and sends half of it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(FIXTURES), **kwargs)

    def do_GET(self):
        if self.path.startswith("/cut/"):
            body = (FIXTURES / Path(self.path).name).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            return
        super().do_GET()

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def server(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_LINEAGE_CACHE", str(tmp_path / "cache"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_url_is_downloaded_once_with_progress_then_read_from_the_cache(server, tmp_path, capfd, monkeypatch):
    base, httpd = server
    urls = [f"{base}/options.json", f"{base}/lm_weights.hdf5"]
    convert("elmo", urls, tmp_path / "first")
    assert "downloading lm_weights.hdf5" in capfd.readouterr().err  # tqdm's bar names the file
    for url, name in zip(urls, ("options.json", "lm_weights.hdf5")):
        assert cached_url_path(url).read_bytes() == (FIXTURES / name).read_bytes()
    httpd.shutdown()  # gone: the cache serves the second conversion, offline as well
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    convert("elmo", urls, tmp_path / "second")
    assert (tmp_path / "second" / "model.safetensors").read_bytes() == (
        tmp_path / "first" / "model.safetensors").read_bytes()


@pytest.mark.parametrize("path, message", [
    ("/no-such/weights.hdf5", r"could not be downloaded \(HTTPError: HTTP Error 404"),
    ("/cut/lm_weights.hdf5", "the download stopped at"),
])
def test_a_failed_download_names_the_url_and_leaves_nothing(server, tmp_path, path, message):
    base, _ = server
    url = base + path
    with pytest.raises(ConversionError, match=message) as error:
        convert("elmo", [f"{base}/options.json", url], tmp_path / "out")
    assert str(error.value).startswith(url) and "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()
    assert not cached_url_path(url).exists() and not list(cached_url_path(url).parent.glob("*.partial"))


def test_an_unreachable_host_is_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_LINEAGE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ConversionError, match=r"127\.0\.0\.1:9/options\.json: could not be downloaded"):
        convert("elmo", ["http://127.0.0.1:9/options.json", "http://127.0.0.1:9/x.hdf5"], tmp_path / "out")
