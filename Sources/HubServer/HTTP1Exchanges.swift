/// The requests a connection's ``HTTP1ServerCodec`` handed on and the responses written to them,
/// which go out in request order: its reading half counts requests in, its writing half
/// (``HTTP1ResponseWriter``) counts answers and learns which ones go without a body.
struct HTTP1Exchanges {
    /// Which of the requests handed on and not answered yet are HEAD requests, oldest in the
    /// lowest bit; past 64 outstanding requests, none is.
    private var headRequests: UInt64 = 0
    private var outstanding = 0
    /// Requests handed on, and responses written to their end.
    private var requests = 0
    private var answers = 0
    /// A refused head's stand-in was handed on, or a request's trailers said `Connection: close`:
    /// the connection closes after the answer to the last request read.
    private var closes = false

    /// A request was handed on: a response is owed to it, without a body when it is a HEAD.
    mutating func requestHandedOn(isHead: Bool) {
        requests += 1
        if isHead && outstanding < 64 { headRequests |= 1 << UInt64(outstanding) }
        outstanding += 1
    }

    /// Every request before the last one handed on was answered to its end.
    var earlierAnswered: Bool { answers == requests - 1 }

    /// The connection closes after the answer to the last request read.
    mutating func closeAfterLastAnswer() { closes = true }

    /// A response's head is written: whether it answers a HEAD request.
    mutating func responseStarted() -> Bool {
        let answersHead = headRequests & 1 == 1
        headRequests >>= 1
        outstanding = max(0, outstanding - 1)
        return answersHead
    }

    /// A response's end is written: whether the connection is to close after it.
    mutating func responseEnded() -> Bool {
        answers += 1
        return closes && answers >= requests
    }
}
