"""The viewer and the server against the browser attacks of docs/http-api.md ("Security"),
in Chromium: a page of a domain that resolves to 127.0.0.1 (DNS rebinding) reads nothing,
a page of another origin reads nothing, and with a token the address bar, the download
links and the server's log never show it."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import motes
from conftest import REBIND_HOST, TOKEN, Page, Server


def test_a_rebound_domain_reads_nothing(server, browser_context):
    port = urlsplit(server.url).port
    page = browser_context.new_page()
    try:
        answer = page.goto(f"http://{REBIND_HOST}:{port}/")
        assert answer.status == 403 and "--allow-host" in page.content()
        # The attacker's script is same-origin with the server for the browser; the server refuses it.
        got = page.evaluate("""async () => {
            const out = [];
            for (const u of ["/api/v1/datasets", "/api/v1/datasets/halves/steps/0/species/particles/export?format=csv"]) {
                const r = await fetch(u);
                out.push([r.status, (await r.text()).slice(0, 300)]);
            }
            return out;
        }""")
        for status, body in got:
            assert status == 403 and "forbidden" in body and "halves" not in body, (status, body)
        # A page of another origin (localhost is not 127.0.0.1 for the browser) cannot read the API either:
        # the server refuses its Origin, and the browser would not hand it the answer.
        page.goto(f"http://localhost:{port}/api/v1/health")
        status = page.evaluate(f"""async () => {{
            try {{ return (await fetch("http://127.0.0.1:{port}/api/v1/datasets")).status; }}
            catch (e) {{ return "blocked: " + e.message; }}
        }}""")
        assert status == 403 or str(status).startswith("blocked"), status
    finally:
        page.close()


def test_the_token_leaves_the_address_bar_links_and_log(data_dir, browser_context):
    s = Server({"halves": data_dir / "halves.motes"}, ("--token", TOKEN, "--log-level", "info"))
    try:
        p = Page(browser_context.new_page())
        p.open(s.url + f"?token={quote(TOKEN)}#ds=halves&step=0")
        assert TOKEN not in p.page.url and "token" not in p.page.url and "ds=halves" in p.page.url
        assert int(p.status()["shown"]) == motes.open(data_dir / "halves.motes").count_total(step=0)
        p.page.uncheck("#export-view")
        p.page.select_option("#export-format", "csv")
        with p.page.expect_download() as d:
            p.page.click("#export")
        assert TOKEN not in d.value.url and "token" not in d.value.url
        rows = d.value.path().read_text().strip().splitlines()
        assert len(rows) - 1 == motes.open(data_dir / "halves.motes").count_total(step=0)
        links = p.page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
        assert not any(TOKEN in h for h in links), links
        assert not p.errors, p.errors
        p.page.close()
    finally:
        s.stop()
    # The address printed at start-up (what the user opens) is the one place the token shows.
    log = "\n".join(line for line in s.output().splitlines() if not line.startswith("open http://"))
    assert "token=[redacted]" in log and TOKEN not in log, log[-3000:]
