#!/usr/bin/env python3
"""Issue 41, stage 2 (NOT to be merged): each capability declares its own
operations. Run after refactor-moves.sh at the repository root.

- The operation vocabulary (Operation, Section, Rest, Hints, io!, ...) moves
  from api/mod.rs to service/caller/operation.rs, below every capability.
- api/catalogue.rs is split: each operation goes to service/<cap>/section.rs
  of the capability that holds the service it runs; a run of operations of one
  original section that belongs to another capability becomes a section of
  its own there (same family, so the same function serves it), named below.
- api/mod.rs lists the sections in the old order (so tools/list and the API
  description keep their order) and re-exports them."""
import re, sys, pathlib, subprocess

S = pathlib.Path('common/src/service')
API = pathlib.Path('common/src/api/mod.rs')
CAT = pathlib.Path('common/src/api/catalogue.rs')

# Where each original section lives, and the names of the pieces of a
# section that belong to another capability.
HOME = {'ONBOARDING': 'accounts', 'ADMIN': 'operators', 'CREDITS': 'accounts', 'DOMAINS': 'domains',
        'MAILBOXES': 'mailboxes', 'SEND': 'sending', 'INBOX': 'receiving', 'DRAFTS': 'receiving',
        'WEBHOOKS': 'webhooks', 'DELIVERY': 'delivery', 'GUARDRAILS': 'guardrails'}
PIECE = {('DOMAINS', 'accounts'): 'DOMAIN_LIST', ('DOMAINS', 'delivery'): 'DMARC',
         ('DOMAINS', 'operators'): 'REMOVAL', ('MAILBOXES', 'operators'): 'MAIL_HOST',
         ('DELIVERY', 'sending'): 'HOLDS', ('SEND', 'receiving'): 'CONVERSATION'}
DOC = {
    'accounts': "Getting an account and what it may spend",
    'operators': "What the operators run",
    'domains': "Domains",
    'mailboxes': "Mailboxes",
    'sending': "Sending",
    'receiving': "Receiving: the inbox and drafts",
    'webhooks': "Webhooks",
    'delivery': "Delivery: the outbox, suppressions, the mail host's log, DMARC reports",
    'guardrails': "Guardrails: scoped keys, the audit log, allow and block lists",
}

def block_end(text, start):
    """Index just past the brace block that opens at or after start."""
    i = text.index('{', start)
    depth = 0
    while True:
        c = text[i]
        if c == '{': depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0: return i + 1
        elif c == '"':
            i += 1
            while text[i] != '"':
                if text[i] == '\\': i += 1
                i += 1
        i += 1

# 1. The vocabulary.
api = API.read_text()
a0 = api.index('/// Where a REST route reads its input.')
a1 = api.index('/// Every operation, in catalogue order.')
o0 = api.index('pub struct Operation {')
# the Operation struct's doc comments, if any, go with it
while api[:o0].rstrip('\n').split('\n')[-1].startswith('///'):
    o0 = api[:o0].rstrip('\n').rfind('\n') + 1
e0 = api.index('pub fn encode(')
o1 = block_end(api, e0)
vocab = api[a0:a1] + api[o0:o1] + '\n'
vocab = vocab.replace('$crate::api::Download', '$crate::service::caller::Download')
vocab = vocab.replace('$crate::api::', '$crate::service::caller::operation::')
vocab = vocab.replace('pub use crate::service::caller::Download;\n', '')
vocab = vocab.replace('    pub family: Family,\n', '')
vocab = vocab.replace('/// The operations one Lambda family serves.', '/// Operations of one capability that one function serves (`functions` in the api module).')
head = '''//! What an operation is: its typed input and output (with their JSON
//! Schemas), its REST method and path, its MCP tool, its access rule and the
//! service it calls. Each capability declares its own operations with these
//! words (its `section.rs`), beside the services they run; the api module
//! gathers the sections into the catalogue and runs them.

use std::future::Future;
use std::pin::Pin;

use http::Method;
use schemars::{Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::value::RawValue;

use super::call::{Call, Download};
use crate::auth::{Access, Permission};
use crate::error::{ApiError, Problem};
use crate::validate::Fields;

'''
(S / 'caller' / 'operation.rs').write_text(head + vocab)
cm = (S / 'caller' / 'mod.rs').read_text()
cm = cm.replace('mod call;\n', 'mod call;\npub mod operation;\n')
(S / 'caller' / 'mod.rs').write_text(cm)
api = api[:a0] + api[a1:o0] + api[o1:]
api = api.replace('pub use crate::service::caller::Download;\n', '')
for unused in ['use std::future::Future;\n', 'use std::pin::Pin;\n', 'use schemars::{Schema, SchemaGenerator};\n',
               'use serde::Serialize;\n', 'use serde_json::value::RawValue;\n']:
    api = api.replace(unused, '')
api = api.replace('pub use catalogue::*;\n', 'pub use crate::service::caller::Download;\npub use crate::service::caller::operation::*;\n')

# 2. The sections.
cat = CAT.read_text()
uses = re.search(r'use crate::service::\{(.*?)\};', cat, re.S).group(1)
alias = {}  # local name -> (capability, leaf)
for part in uses.split(','):
    part = part.strip()
    if not part: continue
    m = re.match(r'([a-z_]+)(?:::([a-z_]+))?(?: as ([a-z_]+))?$', part)
    cap, leaf, name = m.group(1), m.group(2), m.group(3)
    if leaf is None:  # a capability's face
        alias[name or cap] = (cap, None)
    else:
        alias[name or leaf] = (cap, leaf)
consts = {}
for m in re.finditer(r'((?:///[^\n]*\n)*)const ([A-Z_]+): [^=]*= ', cat):
    end = cat.index('];', m.end()) + 2
    consts[m.group(2)] = cat[m.start():end] + '\n'
order, files, families = [], {}, {}
for m in re.finditer(r'((?:///[^\n]*\n)*)pub static ([A-Z_]+): Section = Section \{', cat):
    doc, name = m.group(1), m.group(2)
    end = block_end(cat, m.end() - 1)
    body = cat[m.end():end - 1]
    family = re.search(r'family: ([A-Za-z]+),', body).group(1)
    ops_at = body.index('operations: &[') + len('operations: &[')
    ops, i = [], ops_at
    while True:
        j = body.find('Operation {', i)
        if j < 0: break
        k = block_end(body, j)
        # the operation's own comments
        s = body.rfind('\n', 0, j) + 1
        while body[:s].rstrip('\n').split('\n')[-1].strip().startswith('//'):
            s = body[:s].rstrip('\n').rfind('\n') + 1
        text = body[s:k] + ',\n'
        mod = re.search(r'io!\(\s*(?:accepted\s+|bytes\s+)?([a-z_]+)::', text).group(1)
        cap = alias[mod][0]
        ops.append((cap, text))
        i = k
    runs = []
    for cap, text in ops:
        if runs and runs[-1][0] == cap: runs[-1][1].append(text)
        else: runs.append((cap, [text]))
    if name not in HOME:
        sys.exit(f'section {name}: add it to HOME (its capability)')
    for cap, texts in runs:
        if cap == HOME[name]:
            piece = name
        elif (name, cap) in PIECE:
            piece = PIECE[(name, cap)]
        else:
            sys.exit(f'section {name} has operations of {cap}: name the piece in PIECE')
        pdoc = doc if piece == name else f'/// The {name.lower()} function\'s operations that {cap} holds.\n'
        if (cap, piece) in order:
            # a run after another capability's piece: it joins its own
            # section (the order of operations without a tool is all it moves)
            k = [i for i, s in enumerate(files[cap]) if f'pub static {piece}: Section' in s][0]
            files[cap][k] = files[cap][k][:-len('    ],\n};\n')] + ''.join(texts) + '    ],\n};\n'
            continue
        order.append((cap, piece))
        families.setdefault(family, []).append(piece)
        files.setdefault(cap, []).append(
            pdoc + f'pub static {piece}: Section = Section {{\n    operations: &[\n'
            + ''.join(texts) + '    ],\n};\n')

VOCAB = ['Family', 'Rest', 'Source', 'Hints', 'Operation', 'Section', 'Tool', 'delete', 'get', 'io', 'post', 'post_large', 'post_text', 'tool']
for cap, sections in files.items():
    body = '\n'.join(sections)
    # the catalogue's `super::` was api: its words are the vocabulary's now
    body = re.sub(r'(?<![A-Za-z0-9_:])super::(?=[A-Z])', '', body)
    # services never see axum: the Method is http's
    body = body.replace('axum::http::Method', 'http::Method')
    for cname, ctext in consts.items():
        if re.search(r'\b' + cname + r'\b', body):
            body = ctext + '\n' + body
    words = []
    for w in VOCAB:
        if w == 'Family':
            continue
        elif w == 'io':
            if 'io!(' in body: words.append('io')
        elif re.search(r'(?<![A-Za-z0-9_:])' + w + r'\b', body):
            words.append(w)
    mods = sorted({a for a in alias if re.search(r'(?<![A-Za-z0-9_:])' + a + r'::', body)})
    imports = []
    for a in mods:
        c, leaf = alias[a]
        if c == cap and leaf is None:
            # its own face: name the file behind it (a child never imports
            # its folder's mod.rs)
            if cap == 'delivery':
                segs = sorted(set(re.findall(r'(?<![A-Za-z0-9_:])delivery::([a-z_]+)::', body)))
                body = re.sub(r'(?<![A-Za-z0-9_:])delivery::([a-z_]+)::', r'\1::', body)
                imports += [f'use super::{s};' for s in segs]
            else:
                body = re.sub(r'(?<![A-Za-z0-9_:])' + cap + r'::', 'routes::', body)
                imports.append('use super::routes;')
            continue
        if c != cap:
            path = 'crate::service::' + c + ('' if leaf is None else '::' + leaf)
            imports.append(f'use {path}' + ('' if (leaf or c) == a else f' as {a}') + ';')
        elif leaf is None:
            imports.append(f'use crate::service::{c};')
        else:
            imports.append(f'use super::{leaf}' + ('' if leaf == a else f' as {a}') + ';')
    validate = [w for w in ['Later', 'NoInput'] if re.search(r'\b' + w + r'\b', body)]
    header = [f'//! {DOC[cap]}: the operations this capability declares, each', '//! beside the service it runs. the api module gathers every section into the',
              '//! catalogue (REST, MCP and OpenAPI come from it).', '']
    header += sorted(imports)
    header.append('use crate::auth::Access::*;')
    if 'Permission::' in body: header.append('use crate::auth::Permission;')
    header.append('use crate::error::*;')
    header.append('use crate::service::caller::operation::{' + ', '.join(words) + '};')
    if validate: header.append('use crate::validate::{' + ', '.join(validate) + '};')
    (S / cap / 'section.rs').write_text('\n'.join(header) + '\n\n' + body)
    mod = S / cap / 'mod.rs'
    t = mod.read_text()
    lines = t.split('\n')
    at = max(i for i, l in enumerate(lines) if re.match(r'(pub )?mod \w+;', l))
    lines.insert(at + 1, 'pub mod section;')
    mod.write_text('\n'.join(lines))

listing = '/// Every section, in the order of `tools/list` and the API description.\npub static CATALOGUE: &[&Section] = &[\n'
listing += ''.join(f'    &{piece},\n' for _, piece in order) + '];\n'
reexports = ''
for cap in sorted(files):
    names = sorted(p for c, p in order if c == cap)
    reexports += f'pub use crate::service::{cap}::section::{{{", ".join(names)}}};\n'
api = api.replace('mod catalogue;\n\n', '')
api = api.replace('mod catalogue;\n', '')
at = api.index('/// Every operation, in catalogue order.')
fam_order = re.findall(r'Family::([A-Za-z]+) => "([a-z-]+)"', api)
fns = '''/// Which sections each route family's function serves: the one place the
/// pairing is written. A function's `main.rs` is `common::serve!(NAME)`, so
/// it links only these sections' services.
pub mod functions {
    use super::Section;

'''
for fam, name in fam_order:
    if fam == 'Mcp': continue
    pieces = families.get(fam, [])
    fns += f'    pub static {name.upper().replace("-", "_")}: &[&Section] = &[' + ', '.join(f'&super::{x}' for x in pieces) + '];\n'
fns += '''}

impl Family {
    /// The sections this family's function serves (none for `mcp`, which
    /// serves every tool).
    pub fn sections(self) -> &'static [&'static Section] {
        match self {
'''
for fam, name in fam_order:
    fns += f'            Family::{fam} => ' + ('&[]' if fam == 'Mcp' else f'functions::{name.upper().replace("-", "_")}') + ',\n'
fns += '''        }
    }
}

/// The family whose function serves a section.
pub fn family_of(section: &Section) -> Family {
    *Family::ALL
        .iter()
        .find(|family| family.sections().iter().any(|s| std::ptr::eq(*s, section)))
        .expect("every section is served by a function")
}

'''
api = api[:at] + listing + '\n' + fns + api[at:]
api = api.replace('pub use crate::service::caller::operation::*;\n', 'pub use crate::service::caller::operation::*;\n' + reexports)
API.write_text(api)
subprocess.check_call(['git', 'rm', '-qf', str(CAT)])
subprocess.check_call(['git', 'add', '-A', 'common/src'])
print('sections:', ', '.join(p for _, p in order))

# 3. Fix-ups: a section's family is read from the functions' lists; the
# vocabulary names http's Method (services never see axum).
def sub(path, old, new):
    p = pathlib.Path(path)
    t = p.read_text()
    if old not in t:
        sys.exit(f'{path}: {old!r} not found')
    p.write_text(t.replace(old, new))
sub('common/src/http/mod.rs', 'family: section.family,', 'family: crate::api::family_of(section),')
sub('common/src/openapi.rs', 'operation(section.family,', 'operation(api::family_of(section),')
sub('tests/api/lambda_functions.rs', '(section.family, op.summary)', '(common::api::family_of(section), op.summary)')
sub('Cargo.toml', 'http-body-util = "0.1"\n', 'http = "1"\nhttp-body-util = "0.1"\n')
sub('common/Cargo.toml', 'http-body-util.workspace = true\n', 'http.workspace = true\nhttp-body-util.workspace = true\n')
subprocess.check_call(['git', 'add', '-A', 'common', 'tests', 'Cargo.toml'])
