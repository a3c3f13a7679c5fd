import NIOCore

/// The producer of a streamed request body.
typealias RequestBodySource = NIOThrowingAsyncSequenceProducer<
    ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, RequestBodyDelegate
>.Source

/// Tells a connection's ``RequestDispatcher`` when its route wants more of a streamed body.
struct RequestBodyDelegate: NIOAsyncSequenceProducerDelegate {
    private let handler: NIOLoopBound<RequestDispatcher>
    private let number: UInt64

    init(handler: NIOLoopBound<RequestDispatcher>, number: UInt64) {
        self.handler = handler
        self.number = number
    }

    func produceMore() {
        let handler = self.handler
        let number = self.number
        handler.eventLoop.execute { handler.value.resumeBody(number: number) }
    }

    func didTerminate() {
        let handler = self.handler
        let number = self.number
        handler.eventLoop.execute { handler.value.bodyAbandoned(number: number) }
    }
}

extension RequestBodySource {
    /// A body stream for the request of `handler`: its producer and the sequence the route reads.
    static func make(
        handler: NIOLoopBound<RequestDispatcher>, number: UInt64
    ) -> (
        producer: RequestBodySource,
        sequence: NIOThrowingAsyncSequenceProducer<
            ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, RequestBodyDelegate
        >
    ) {
        let made = NIOThrowingAsyncSequenceProducer.makeSequence(
            elementType: ByteBuffer.self, failureType: (any Error).self,
            backPressureStrategy: .init(lowWatermark: 2, highWatermark: 8), finishOnDeinit: false,
            delegate: RequestBodyDelegate(handler: handler, number: number))
        return (made.source, made.sequence)
    }
}
