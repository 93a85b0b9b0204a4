// What the API says, in words for people. The API's sentences are written for
// programs ("call POST /verifyDomain", "holdId is required"); the page shows
// these instead, and any sentence not listed here as the API wrote it.

const SETTING_UP = 'Your email is confirmed. Before a new account gets its key, an operator reviews the request. '
  + 'Once it is approved, ask for access again here with the same email '
  + 'and enter the new code: your key is shown then.';

const PEOPLE = new Map([
  ['Publish the DNS records from GET /getDnsInstructions, then call POST /verifyDomain (MCP: get_dns_instructions, verify_domain).', 'Publish the DNS records shown on the Domain page, then check them there.'],
  ['Add your domain with POST /addDomain (MCP: add_domain).', 'Add your domain on the Domain page.'],
  ['Add a hosted mailbox on your verified domain with POST /addMailbox (MCP: add_mailbox).', 'Add a mailbox on the Mailboxes page.'],
  ['Your account is being set up. Check back with getRequestStatus (MCP: get_request_status).', 'Your account is being set up. Come back once it is approved.'],
  // A verified request for a domain not yet approved: a person reviews it.
  ['Your account is being set up; no key is issued yet. Check back with getRequestStatus: once it says ready, ask again with requestAccess and verify the new code to get your key.', SETTING_UP],
  ['contactEmail, domain, agentName, and intendedUse are required', 'Fill in your email, your organization\'s domain, the agent\'s name and what you will use it for.'],
  ['contactEmail is not a valid email address', 'Enter your email address, such as ann@example.com.'],
  ['domain is not a valid hostname', 'Enter your organization\'s domain, such as example.com.'],
  ['agentName must be at most 100 characters', 'Keep the agent name to 100 characters or fewer.'],
  ['intendedUse must be at most 1000 characters', 'Keep what you will use it for to 1,000 characters or fewer.'],
  ['requestId and code are required', 'Enter the 8-digit code from the email.'],
  ['email is not a valid email address', 'Enter a valid email address, such as ann@example.com.'],
  ['forwardTo is required for forward and both', 'Add at least one address to forward to.'],
  ['forwardTo must be empty for a hosted mailbox', 'A hosted mailbox forwards nowhere: leave Forward to empty, or choose a mode that forwards.'],
  ['forwardTo may hold at most 5 addresses', 'Forward to at most 5 addresses.'],
  ['localPart is required', 'Enter the mailbox name (the part before the @).'],
  ['from is not a valid email address', 'Choose a valid address in From.'],
  ['holdId is required', 'Enter the hold from the approval email (it starts with snd_).'],
  ['to, subject, and text are required', 'Add a recipient, a subject and a message.'],
  ['sendAt must be an RFC 3339 time in the future, at most 30 days ahead', 'Choose a time in the future, at most 30 days ahead.'],
  ['Choose the address to send from', 'Choose the address to send from in From.'],
  ['Rate limit exceeded', 'Too many tries in a short time.'],
]);

// The sentence a person reads for the API's `sentence`, with when to try
// again when the API said (a 429's retryAfter, in seconds).
export function forPeople(sentence, retryAfter) {
  const said = PEOPLE.get(sentence) || sentence;
  if (!retryAfter) return said;
  return `${said} Try again in ${wait(retryAfter)}.`;
}

function wait(seconds) {
  if (seconds < 90) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 90) return `${minutes} minutes`;
  return `${Math.ceil(minutes / 60)} hours`;
}
