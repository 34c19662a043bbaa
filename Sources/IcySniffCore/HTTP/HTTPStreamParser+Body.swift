/// Body bytes, gaps in bodies, and the end of a message. What a body is (sizes, decoding,
/// `--bodies`) is `HTTPMessage`'s (MessageBody.swift), shared with HTTP/2.
extension HTTPStreamParser {
    func setUpDecoder(_ m: HTTPMessage) {
        m.setUpBodyDecoder(options: options)
    }

    @inline(__always)
    func bodyData(_ data: UnsafeRawBufferPointer, wire: Int) {
        guard let m = message else { return }
        m.receiveBody(data, wire: wire, options: options)
    }

    func bodyGap(_ length: UInt64) {
        guard let m = message else { return }
        m.receiveBodyGap(length)
    }

    func endMessage(at ts: Timestamp, complete: Bool) {
        if case .tunnel = state {} else { transition(to: .start) }
        guard let m = message else { return }
        m.arrival.lastByte = max(m.arrival.lastByte, ts)
        m.complete = complete
        m.ended = true
        m.endBody(complete: complete, options: options)
        if !complete { m.note(m.kind == .request ? .requestIncomplete : .responseIncomplete) }
        setMessage(nil)
        callout { delegate.parserEnded(m) }
    }
}
