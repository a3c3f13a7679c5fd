// @ts-check
/** The one error type of the client: a stable `code` to switch on, and the hub's problem details
 * (`application/problem+json`) when it sent some. */

/**
 * @typedef {'unauthorized' | 'forbidden' | 'notFound' | 'invalidRequest' | 'invalidCursor' |
 *   'cursorExpired' | 'tooLarge' | 'conflict' | 'rateLimited' | 'unavailable' | 'server' |
 *   'transport' | 'invalidResponse' | 'tokenUnavailable' | 'storage' | 'aborted'} HubErrorCode
 */

/** @typedef {{ field: string, message: string }} FieldError */

/** The problem types of the hub (the slug after `/problems/`) and the codes they map to. */
const codesByProblem = /** @type {Record<string, HubErrorCode>} */ ({
  'invalid-request': 'invalidRequest',
  'invalid-cursor': 'invalidCursor',
  'invalid-subscription': 'invalidRequest',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  'not-found': 'notFound',
  'not-configured': 'notFound',
  'method-not-allowed': 'invalidRequest',
  conflict: 'conflict',
  'payload-too-large': 'tooLarge',
  'body-too-large': 'tooLarge',
  'unsupported-media-type': 'invalidRequest',
  'rate-limited': 'rateLimited',
  unavailable: 'unavailable',
  'internal-error': 'server',
});

export class HubError extends Error {
  /**
   * @param {HubErrorCode} code what went wrong, stable across releases
   * @param {string} message what went wrong and what to do: the problem's `detail`, or the client's
   * @param {object} [details]
   * @param {number} [details.status] the HTTP status, when the hub answered
   * @param {string} [details.problemType] the problem `type` URI
   * @param {string} [details.title] the problem `title`
   * @param {FieldError[]} [details.fieldErrors] every field error of an `invalidRequest` problem
   * @param {number} [details.retryAfter] milliseconds to wait before retrying (`Retry-After`)
   * @param {unknown} [details.cause] the error beneath (a failed `fetch`, the token provider's)
   */
  constructor(code, message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'HubError';
    /** @type {HubErrorCode} */
    this.code = code;
    /** @type {number | undefined} */
    this.status = details.status;
    /** @type {string | undefined} */
    this.problemType = details.problemType;
    /** @type {string | undefined} */
    this.title = details.title;
    /** @type {FieldError[]} */
    this.fieldErrors = details.fieldErrors ?? [];
    /** @type {number | undefined} */
    this.retryAfter = details.retryAfter;
  }

  /** Whether the same request may succeed later: connection failures, 5xx, 429 and 503. */
  get isTransient() {
    return ['transport', 'server', 'unavailable', 'rateLimited'].includes(this.code);
  }

  /** Whether the feed cursor is no longer good and the feed must be read again from its start:
   * 400 `invalid-cursor` (another user's or app's, a rotated key) or 410 (expired). */
  get needsResync() {
    return this.code === 'invalidCursor' || this.code === 'cursorExpired';
  }

  /**
   * The error of a non-2xx answer, from its problem details when it has them.
   * @param {Response} response
   * @param {string} what the request, for the message (`GET me/feed`)
   * @returns {Promise<HubError>}
   */
  static async fromResponse(response, what) {
    /** @type {any} */
    let problem = {};
    try {
      problem = JSON.parse(await response.text());
    } catch {
      problem = {};
    }
    if (problem === null || typeof problem !== 'object') problem = {};
    const type = typeof problem.type === 'string' ? problem.type : undefined;
    const slug = type?.split('/').pop() ?? '';
    /** @type {HubErrorCode} */
    let code = codesByProblem[slug] ?? codeForStatus(response.status);
    if (response.status === 410) code = 'cursorExpired';
    const detail = typeof problem.detail === 'string' ? problem.detail : `The hub answered HTTP ${response.status}.`;
    return new HubError(code, `${what}: ${detail}`, {
      status: response.status,
      problemType: type,
      title: typeof problem.title === 'string' ? problem.title : undefined,
      fieldErrors: Array.isArray(problem.errors) ? problem.errors : [],
      retryAfter: parseRetryAfter(response.headers.get('Retry-After')),
    });
  }
}

/**
 * @param {number} status
 * @returns {HubErrorCode}
 */
function codeForStatus(status) {
  if ([400, 405, 415, 422].includes(status)) return 'invalidRequest';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'notFound';
  if (status === 409) return 'conflict';
  if (status === 410) return 'cursorExpired';
  if (status === 413) return 'tooLarge';
  if (status === 429) return 'rateLimited';
  if (status === 503) return 'unavailable';
  if (status >= 500 && status < 600) return 'server';
  return 'invalidResponse';
}

/**
 * `Retry-After` in milliseconds: delta-seconds or an HTTP date; `undefined` when absent or unreadable.
 * @param {string | null} value
 * @param {number} [now] milliseconds since the epoch
 * @returns {number | undefined}
 */
export function parseRetryAfter(value, now = Date.now()) {
  if (value == null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
