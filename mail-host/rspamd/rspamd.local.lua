-- The mail host's verdict for the service, written into each message the
-- port-25 milter scans (scripts/mail-host renders @VERDICT_HEADER@: the header
-- name carries a secret of this host's). The spool pipe reads it into the
-- envelope line (`mailhost deliver --verdict-header`) and takes it out of the
-- message. X-Rspamd-Action, which the milter adds beside it, is never read
-- by the service.
local ucl = require "ucl"

local header = '@VERDICT_HEADER@'
-- The heaviest rules kept (the service keeps 40).
local max_symbols = 40
-- rspamd's own test pattern: a message carrying it is judged by rspamd while
-- it reads the message, and no rule after that runs (MAILHOST_VERDICT
-- included), so its verdict is written here, up front.
local gtube = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X'

local function verdict_json(score, action, symbols)
  return ucl.to_format({ score = score, action = action, symbols = symbols }, 'json-compact')
end

-- First, for every message (a connection filter runs before rspamd reads
-- the message, so even one it stops early gets it): nothing is refused or
-- deferred at SMTP time (no_action; the service files spam into its spam
-- folder instead, by the owner's settings), and any header of the verdict's
-- name that came with the message is removed, so only this host's own can
-- reach the spool pipe.
rspamd_config:register_symbol({
  name = 'MAILHOST_NO_SMTP_ACTION',
  type = 'connfilter',
  flags = 'empty,nostat',
  callback = function(task)
    local reply = { no_action = true, remove_headers = { [header] = 0 } }
    local content = task:get_content()
    if content then
      local head = tostring(content:sub(1, 65536))
      if head:find(gtube, 1, true) then
        local reject = (rspamd_config:get_all_actions() or {})['reject'] or 15
        reply.add_headers = { [header] = verdict_json(reject, 'reject', { GTUBE = 0 }) }
        task:cache_set('mailhost_verdict', true)
      end
    end
    task:set_milter_reply(reply)
  end,
})

-- Last, once every rule has run: the verdict.
rspamd_config:register_symbol({
  name = 'MAILHOST_VERDICT',
  type = 'idempotent',
  flags = 'empty,ignore_passthrough',
  callback = function(task)
    if task:cache_get('mailhost_verdict') then
      return
    end
    local score = task:get_metric_score()
    local all = task:get_symbols_all() or {}
    table.sort(all, function(a, b) return math.abs(a.score or 0) > math.abs(b.score or 0) end)
    -- The rules that weighed; when none did, the rules that fired.
    local symbols, weighed = {}, 0
    for _, s in ipairs(all) do
      if weighed < max_symbols and s.name and s.score and s.score ~= 0 then
        symbols[s.name] = s.score
        weighed = weighed + 1
      end
    end
    if weighed == 0 then
      for i, s in ipairs(all) do
        if i > max_symbols then break end
        if s.name then symbols[s.name] = s.score or 0 end
      end
    end
    local action = task:get_metric_action() or 'no action'
    task:set_milter_reply({
      add_headers = { [header] = verdict_json(score and score[1] or 0, action, symbols) },
    })
  end,
})
