extension HTTPMessage {
    /// Start line and fields of an HTTP/2 or HTTP/3 message from its decoded field section (one
    /// rule for both): the pseudo-headers give the method, the target (`:path`, or `:authority`
    /// for CONNECT, RFC 9113 §8.5 / RFC 9114 §4.4) and the status; the fields stay as listed.
    /// `encodedSize`: the section's bytes on the wire (HPACK/QPACK-encoded), HAR `headersSize`.
    func takeFieldSection(_ fields: HeaderFields, version: String, encodedSize: Int, first: Timestamp, at ts: Timestamp,
                          options: HTTPParserOptions) {
        headers = fields
        self.version = version
        startLineParsed = true
        headersComplete = true
        headersSize = encodedSize
        arrival.firstByte = first
        arrival.headersEnd = ts
        arrival.lastByte = ts
        var authority: [UInt8]? = nil
        var path: [UInt8]? = nil
        for i in fields.indices {
            fields.withNameAndValueBytes(at: i) { name, value in
                guard name.first == UInt8(ascii: ":") else { return }
                if equalsBytes(name, ":method") { method = String(wireBuffer: value) }
                else if equalsBytes(name, ":path") { path = Array(value) }
                else if equalsBytes(name, ":authority") { authority = Array(value) }
                else if equalsBytes(name, ":status") { status = Self.parseStatus(value) }
            }
        }
        if kind == .request { target = path ?? authority ?? [] }
        setUpBodyDecoder(options: options)
    }

    private static func parseStatus(_ value: UnsafeBufferPointer<UInt8>) -> Int {
        guard value.count == 3 else { return 0 }
        var status = 0
        for c in value {
            guard c >= 0x30 && c <= 0x39 else { return 0 }
            status = status * 10 + Int(c - 0x30)
        }
        return status
    }

    /// The end of the message as its framing says (END_STREAM, a QUIC stream's FIN, the end of a
    /// promised request).
    func endAsFramed(at ts: Timestamp, options: HTTPParserOptions) {
        arrival.lastByte = max(arrival.lastByte, ts)
        complete = true
        ended = true
        endBody(complete: true, options: options)
    }
}
