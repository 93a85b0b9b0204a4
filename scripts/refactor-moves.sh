#!/usr/bin/env bash
# Issue 41's moves, replayable on a changed main (NOT to be merged): puts each
# service module in its capability folder with `git mv`, writes the folders'
# `mod` lines, and rewrites every path that named a moved module. Run at the
# repository root on a clean tree; then `cargo fmt --all` and commit.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
S=common/src/service
test -f $S/accounts.rs || { echo "already moved?"; exit 1; }

# old module (file or folder under service/) -> new path under service/
MOVES="
accounts=caller/account
credits=accounts/credits
allowlist=accounts/allowlist
payer=accounts/payer
onboarding=accounts/onboarding
account=accounts/status
dkim=domains/dkim
recheck=domains/recheck
mailbox=mailboxes/mailbox
forwarding=mailboxes/forwarding
mailboxes=mailboxes/routes
webhooks=webhooks/routes
api_keys=guardrails/api_keys
audit=guardrails/audit
lists=guardrails/lists
sent=delivery/sent
suppressions=delivery/suppressions
contacts=delivery/contacts
outbox=delivery/outbox
dmarc=delivery/dmarc
send=sending/send
submission=sending/submission
pending=sending/pending
replies=sending/replies
inbox=receiving/inbox
poller=receiving/poller
drafts=receiving/drafts
waits=receiving/waits
admin=operators/admin
removal=operators/removal
bootstrap=operators/bootstrap
mta_export=operators/mta_export
operator_sign_in=operators/operator_sign_in
boundary=delivery/boundary
conversation=receiving/conversation
mailbox_sync=receiving/mailbox_sync
search=receiving/search
spam=receiving/spam
"
# Modules a later main may add at service/'s root are listed by the
# rewrite as it finds them; stop if one is unplaced.
for f in $S/*.rs $S/*/; do
  name=$(basename "$f" .rs); name=${name%/}
  [ "$name" = mod ] && continue
  case " accounts credits allowlist payer onboarding account dkim recheck mailbox forwarding mailboxes webhooks api_keys audit lists sent suppressions contacts outbox dmarc send submission pending replies inbox poller drafts waits admin removal bootstrap mta_export operator_sign_in boundary conversation mailbox_sync search spam domains delivery mail_store " in
    *" $name "*) ;;
    *) echo "unplaced service module: $name (add it to MOVES)"; exit 1;;
  esac
done

# 1. Rewrite the paths first (the rewrite needs to know where each file was).
python3 - "$MOVES" <<'PY'
import re, sys, pathlib, subprocess
moves = dict(l.split('=') for l in sys.argv[1].split() if l)
# module path (with ::) each old name now has under service
new = {old: path.replace('/', '::') for old, path in moves.items()}
# faces that re-export their content module
new['mailboxes'] = 'mailboxes'
new['webhooks'] = 'webhooks'
new['Call'] = 'caller::Call'
new['Download'] = 'caller::Download'
def leaf(p): return p.split('::')[-1]

def map_elem(elem):
    """One element of a `service::{...}` group, or the tail after `service::`."""
    m = re.match(r'(\s*)([A-Za-z_][A-Za-z0-9_]*)(.*)', elem, re.S)
    if not m: return elem
    ws, head, rest = m.groups()
    if head not in new: return elem
    target = new[head]
    if leaf(target) != head and head not in ('Call', 'Download'):
        # keep the old name in scope where the path binds a name
        if rest.startswith('::{self') :
            return ws + target + '::{self as ' + head + rest[len('::{self'):]
        if rest.strip() == '' :
            return ws + target + ' as ' + head + rest
    return ws + target + rest

# names at service/'s root that stay where they are
stay = {'domains', 'delivery', 'mail_store'}

def rewrite(text, prefix, absolute=None):
    """Rewrite `prefix name...` and `prefix {a, b}`; absolute: what the
    prefix becomes (super:: in a moved file becomes crate::service::)."""
    out = prefix if absolute is None else absolute
    pat = re.compile(r'(?<![A-Za-z0-9_:])' + re.escape(prefix) + r'(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|[A-Za-z_][A-Za-z0-9_]*(?:::\{self)?)')
    def sub(m):
        body = m.group(1)
        if body.startswith('{'):
            inner = body[1:-1]
            # split on top-level commas
            parts, depth, cur = [], 0, ''
            for ch in inner:
                if ch == '{': depth += 1
                if ch == '}': depth -= 1
                if ch == ',' and depth == 0: parts.append(cur); cur = ''
                else: cur += ch
            parts.append(cur)
            names = [re.match(r'\s*([A-Za-z_][A-Za-z0-9_]*)', p) for p in parts if p.strip()]
            if absolute is not None and not any(n and n.group(1) in new.keys() | stay for n in names):
                return m.group(0)
            return out + '{' + ','.join(map_elem(p) if p.strip() else p for p in parts) + '}'
        head = re.match(r'[A-Za-z_][A-Za-z0-9_]*', body).group(0)
        if absolute is not None and head in stay:
            return out + body
        if head not in new:
            return m.group(0)
        # a bare `use prefix::old;` keeps binding its old name
        tail = body[len(head):]
        after = m.string[m.end():m.end()+1]
        if tail == '' and after == ';' and leaf(new[head]) != head and head not in ('Call','Download'):
            return out + new[head] + ' as ' + head
        if tail == '::{self':
            return out + map_elem(body)
        return out + new[head] + tail
    return pat.sub(sub, text)

files = subprocess.check_output(['git', 'ls-files', '*.rs']).decode().split()
S = 'common/src/service/'
for f in files:
    p = pathlib.Path(f)
    text = p.read_text()
    orig = text
    text = rewrite(text, 'crate::service::')
    text = rewrite(text, 'common::service::')
    if f.startswith(S):
        rel = f[len(S):]
        if rel == 'mod.rs':
            # service/mod.rs names its children bare
            names = '|'.join(k for k in new if k not in ('Call', 'Download'))
            text = re.sub(r'(?<![A-Za-z0-9_:])(' + names + r')::(?=[A-Za-z{])', lambda m: new[m.group(1)] + '::', text)
        elif '/' not in rel or rel.count('/') == 1 and rel.endswith('/mod.rs'):
            # its `super::` was service/: now it is the capability folder
            text = rewrite(text, 'super::', 'crate::service::')
        elif rel.count('/') == 1:
            text = rewrite(text, 'super::super::', 'crate::service::')
    if text != orig:
        p.write_text(text)
PY

# 2. The moves.
for line in $MOVES; do
  old=${line%%=*}; to=${line#*=}
  [ -e "$S/$old.rs" ] || [ -d "$S/$old" ] || continue  # not on this main
  mkdir -p "$S/$(dirname "$to")"
  if [ -f "$S/$old.rs" ]; then git mv "$S/$old.rs" "$S/$to.rs"; else git mv "$S/$old" "$S/$to"; fi
  # a folder that was there already (domains, delivery) gets its new child's mod line
  case $to in domains/*|delivery/*) printf 'pub mod %s;\n' "$(basename "$to")" >> "$S/$(dirname "$to")/mod.rs";; esac
done

# 3. The mod lines: service/ names its capabilities; each new folder its files.
face() { # folder, doc, then names re-exported whole (`pub use x::*`): every
  # other file and folder in it is a `pub mod`
  local dir=$1 doc=$2; shift 2
  local whole=" $* "
  { echo "//! $doc"; echo
    for m in $(cd "$S/$dir" && ls | sed 's/\.rs$//' | grep -v '^mod$' | sort); do
      case $whole in *" $m "*) echo "mod $m;";; *) echo "pub mod $m;";; esac
    done
    for m in "$@"; do echo; echo "pub use $m::*;"; done
  } > "$S/$dir/mod.rs"
  git add "$S/$dir/mod.rs"
}
face accounts "Getting an account and what it may spend: onboarding by emailed code, the account's status, credits, the allowlist, and who pays for a send."
face mailboxes "Mailboxes: the record, the routes that add, change and delete them, and forwarding." routes
face webhooks "Webhooks: the registration, the events published to it, the delivery log and replay." routes
face guardrails "What a customer sets to limit its own account: scoped keys, the audit log, allow and block lists."
face sending "Sending: sendMail, the mail host's submissions, held and scheduled sends, and a sent reply's filing."
face receiving "Receiving: filing what the mail host drops (the poller) and its spam verdict, reading it (the inbox, search), replying to it (conversation), drafts, waiting for mail, and the IMAP door (mailbox_sync)."
face operators "What the operators run: decisions and the allowlist, removals, the bootstrap and the mail host's export."
# caller/: Call and Download leave service/mod.rs (everything from its first
# `use crate::` line on) for caller/call.rs.
python3 - <<'PY2'
import pathlib
p = pathlib.Path('common/src/service/mod.rs')
t = p.read_text()
at = t.index('\nuse crate::')
body = t[at + 1:].replace('caller::account::', 'super::account::')
pathlib.Path('common/src/service/caller/call.rs').write_text(
    "//! A call: who is calling, through which surface, from where, and the\n"
    "//! account it acts for, read once.\n\n" + body)
p.write_text(t[:at + 1])
PY2
printf '%s\n' "//! Who is calling ([\`Call\`]) and the account it acts for ([\`account\`])." "" "pub mod account;" "mod call;" "" "pub use call::{Call, Download};" > $S/caller/mod.rs
python3 - <<'PY'
import re, pathlib
p = pathlib.Path('common/src/service/mod.rs')
t = p.read_text()
mods = ['accounts', 'caller', 'delivery', 'domains', 'guardrails', 'mail_store', 'mailboxes', 'operators', 'receiving', 'sending', 'webhooks']
lines = t.split('\n')
first = next(i for i, l in enumerate(lines) if l.startswith('pub mod '))
rest = [l for l in lines[first:] if not l.startswith('pub mod ')]
p.write_text('\n'.join(lines[:first] + ['pub mod ' + m + ';' for m in mods] + rest))
PY
# Fix-ups: a folder's face no longer imports its own child by a long path.
sed -i 's/^use crate::service::{delivery::suppressions, webhooks};/use crate::service::webhooks;/' $S/delivery/mod.rs
git add -A common/src
echo "moved; now: cargo fmt --all && cargo check"
