import { forPeople } from './words.js';

// The REST API, same origin. The credential (a key or an identity token) is
// kept in this tab's sessionStorage only: it goes in the Authorization header,
// never in a URL, and is gone when the tab closes or the person signs out.

const SLOT = 'mailhost.credential';

let credential = sessionStorage.getItem(SLOT);

export function signedIn() {
  return Boolean(credential);
}

export function signIn(value) {
  credential = value.trim();
  sessionStorage.setItem(SLOT, credential);
}

// Everything the tab kept (the credential, the sends it scheduled) goes.
export function signOut() {
  credential = null;
  sessionStorage.clear();
}

// An identity token is a JWT (three dot-separated parts); a key is not.
export function isToken() {
  return Boolean(credential) && credential.split('.').length === 3;
}

// An error the API answered, or the network failure, as one sentence.
// `api` is the API's own sentence; the message is what a person reads.
export class ApiError extends Error {
  constructor(sentence, status, body) {
    super(forPeople(sentence, body && body.retryAfter));
    this.api = sentence;
    this.status = status;
    this.body = body;
    this.code = body && body.code;
  }
}

const UNREACHABLE = 'The service could not be reached. Check the connection and try again.';

function url(path, query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== '') params.set(name, value);
  }
  const q = params.toString();
  return q ? `${path}?${q}` : path;
}

// `anonymous`: without the signed-in credential (a hold decided by its code).
async function send(method, path, { query, body, anonymous } = {}) {
  const headers = {};
  if (credential && !anonymous) headers.Authorization = `Bearer ${credential}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  try {
    return await fetch(url(path, query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
  } catch {
    throw new ApiError(UNREACHABLE, 0, null);
  }
}

// A JSON call: the answer's body, or an ApiError with the API's own sentence.
export async function call(method, path, options) {
  const res = await send(method, path, options);
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok || (data && data.ok === false)) {
    const sentence = (data && data.error) || `The service answered ${res.status}.`;
    throw new ApiError(sentence, res.status, data);
  }
  return data;
}

export const get = (path, query) => call('GET', path, { query });
export const post = (path, body) => call('POST', path, { body: body || {} });
export const del = (path, body, query) => call('DELETE', path, { body, query });

// A file the API serves (an attachment): a Blob, or an ApiError.
export async function blob(path, query) {
  const res = await send('GET', path, { query });
  if (!res.ok) {
    let sentence = `The service answered ${res.status}.`;
    let data = null;
    try {
      data = await res.json();
      sentence = data.error || sentence;
    } catch {
      // not JSON: keep the status sentence
    }
    throw new ApiError(sentence, res.status, data);
  }
  return res.blob();
}
