// The reference for HTTPFramingDifferentialTests: Node's own HTTP/1.1 server (its parser is
// llhttp, strict: no --insecure-http-parser). Every request it accepts is answered 200 with an
// X-Echo header: method, target, body length and the body's bytes in hexadecimal, so the test can see
// where each request started and ended and which bytes its body held. What llhttp refuses is
// answered 400 with X-Parse-Error (llhttp's error code, HPE_INVALID_EOF_STATE for a message cut
// short by the client's FIN), after the answers to the requests before it, and the connection
// closes. Listens on 127.0.0.1, port 0; prints the port on its first line of output. Needs
// nothing but node (no npm packages).
import http from "node:http";

const server = http.createServer(
  {
    // Node's defaults, said out loud: the strict parser and a required Host (RFC 9112).
    insecureHTTPParser: false,
    requireHostHeader: true,
    keepAliveTimeout: 30_000,
    requestTimeout: 0,
  },
  (request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const echo = `${request.method} ${request.url} ${body.length} ${body.toString("hex")}`;
      response.writeHead(200, { "x-echo": echo, "content-type": "text/plain", "content-length": 0 });
      response.end();
    });
  },
);
// Node's own answer to a parse error can overtake the answer to the request before it (that one
// is written on the request's "end" event, a tick later): answer after it instead.
server.on("clientError", (error, socket) => {
  setImmediate(() => {
    if (!socket.writable) return socket.destroy();
    socket.end(`HTTP/1.1 400 Bad Request\r\nX-Parse-Error: ${error.code}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
// Ends with its parent: the test closes its stdin.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
