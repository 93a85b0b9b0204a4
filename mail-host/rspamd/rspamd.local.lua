-- The mail host's verdict for the service, written into each message the
-- port-25 milter scans (scripts/mail-host renders @VERDICT_HEADER@: the header
-- name carries a secret of this host's). Any header of that name the message
-- came with is removed first, so only rspamd's own can reach the spool pipe,
-- which reads it into the envelope line (`mailhost deliver --verdict-header`)
-- and takes it out of the message. Nothing is rejected or deferred at SMTP
-- time (no_action): the service files spam into its spam folder instead,
-- by the owner's settings. X-Rspamd-Action, which the milter adds with it,
-- is never read by the service.
local ucl = require "ucl"

local header = '@VERDICT_HEADER@'
-- The heaviest rules kept (the service keeps 40).
local max_symbols = 40

rspamd_config:register_symbol({
  name = 'MAILHOST_VERDICT',
  type = 'idempotent',
  flags = 'empty,ignore_passthrough',
  callback = function(task)
    local score = task:get_metric_score()
    local symbols = {}
    local all = task:get_symbols_all() or {}
    table.sort(all, function(a, b) return math.abs(a.score or 0) > math.abs(b.score or 0) end)
    for i, s in ipairs(all) do
      if i > max_symbols then break end
      if s.name and s.score and s.score ~= 0 then
        symbols[s.name] = s.score
      end
    end
    local verdict = {
      score = score and score[1] or 0,
      action = task:get_metric_action() or 'no action',
      symbols = symbols,
    }
    task:set_milter_reply({
      no_action = true,
      remove_headers = { [header] = 0 },
      add_headers = { [header] = ucl.to_format(verdict, 'json-compact') },
    })
  end,
})
