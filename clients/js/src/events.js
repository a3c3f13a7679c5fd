// @ts-check
/** A parser of `text/event-stream` (server-sent events) fed with text as it arrives. */

/** @typedef {{ id?: string, type?: string, data: string }} ServerSentEvent */

export class EventStreamParser {
  constructor() {
    this.buffer = '';
    /** @type {string | undefined} */
    this.id = undefined;
    /** @type {string | undefined} */
    this.type = undefined;
    /** @type {string[]} */
    this.data = [];
    /** The last `retry:` the stream sent, in milliseconds. @type {number | undefined} */
    this.retry = undefined;
    /** Whether any byte arrived (an event, a comment or a keepalive). */
    this.receivedAnything = false;
  }

  /**
   * Takes the next piece of the stream; returns the events it completed.
   * @param {string} text
   * @returns {ServerSentEvent[]}
   */
  push(text) {
    if (text.length > 0) this.receivedAnything = true;
    this.buffer += text;
    /** @type {ServerSentEvent[]} */
    const events = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A lone CR at the end may be the first half of CRLF: wait for more.
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      if (line === '') {
        if (this.data.length > 0) events.push({ id: this.id, type: this.type, data: this.data.join('\n') });
        this.type = undefined;
        this.data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.type = value;
      else if (field === 'id' && !value.includes('\0')) this.id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
    }
    return events;
  }
}
