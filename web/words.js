// What the API says, in words for people. The API's sentences are written for
// programs ("call POST /verifyDomain", "holdId is required"); the page shows
// these instead, and any sentence not listed here as the API wrote it.

const PEOPLE = new Map([
  ['Publish the DNS records from GET /getDnsInstructions, then call POST /verifyDomain.', 'Publish the DNS records shown on the Domain page, then check them there.'],
  ['Add your domain with POST /addDomain.', 'Add your domain on the Domain page.'],
  ['Add a hosted mailbox on your verified domain with POST /addMailbox.', 'Add a mailbox on the Mailboxes page.'],
  ['Your account is being set up. Check back with getRequestStatus.', 'Your account is being set up. Come back once it is approved.'],
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
