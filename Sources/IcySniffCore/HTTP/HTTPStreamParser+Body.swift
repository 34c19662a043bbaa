/// Body bytes (counted, decoded, kept when asked), gaps in bodies, and the end of a message.
extension HTTPStreamParser {
    func setUpDecoder(_ m: HTTPMessage) {
        guard let first = m.headers.index(of: .contentEncoding) else { return }
        let tokens: [String]
        // The usual case, one `Content-Encoding: gzip` line, without splitting Strings.
        if m.headers.count(of: .contentEncoding) == 1,
           m.headers.withValueBytes(at: first, { equalsBytes($0, "gzip") }) {
            tokens = ["gzip"]
        } else {
            guard let encoding = m.headers.combined(.contentEncoding) else { return }
            tokens = encoding.split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        }
        m.contentEncodings = tokens
        do {
            m.decoder = try ContentDecoder(encodings: tokens, maxOutput: options.maxDecodedBytes,
                                           keepsOutput: options.keepBodies)
        } catch {
            m.note(.unsupportedContentEncoding)
        }
    }

    @inline(__always)
    func bodyData(_ data: UnsafeRawBufferPointer, wire: Int) {
        guard let m = message, data.count > 0 else { return }
        m.bodyBytes &+= UInt64(data.count)
        m.bodyWireBytes &+= UInt64(wire)
        if let decoder = m.decoder, !m.decodeFailed {
            let keep = options.keepBodies
            let cap = options.maxBodyBytes
            let ok = decoder.feed(data) { out in
                if keep { Self.keep(out, in: m, cap: cap) }
            }
            decoderStatus(decoder, ok: ok, m)
        } else {
            m.decodedBytes &+= UInt64(data.count)
            if options.keepBodies && (m.decoder == nil) { Self.keep(data, in: m, cap: options.maxBodyBytes) }
        }
    }

    func finishDecoding(_ m: HTTPMessage) {
        guard let decoder = m.decoder, !m.decodeFailed else { return }
        let keep = options.keepBodies
        let cap = options.maxBodyBytes
        let ok = decoder.finish { out in
            if keep { Self.keep(out, in: m, cap: cap) }
        }
        decoderStatus(decoder, ok: ok, m)
    }

    @inline(__always)
    func decoderStatus(_ decoder: ContentDecoder, ok: Bool, _ m: HTTPMessage) {
        m.decodedBytes = decoder.decodedCount
        if decoder.capped && !m.decodeCapped { m.decodeCapped = true; m.note(.bodyDecodeCapped) }
        if !ok { m.decodeFailed = true; m.note(.bodyDecodeFailed) }
    }

    static func keep(_ data: UnsafeRawBufferPointer, in m: HTTPMessage, cap: Int) {
        if m.body == nil { m.body = [] }
        let room = cap - m.body!.count
        if room <= 0 { if !m.bodyTruncated { m.bodyTruncated = true; m.note(.bodyTruncatedInMemory) }; return }
        if data.count > room {
            m.body!.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[0..<room]))
            m.bodyTruncated = true
            m.note(.bodyTruncatedInMemory)
        } else {
            m.body!.append(contentsOf: data)
        }
    }

    func bodyGap(_ length: UInt64) {
        guard let m = message, length > 0 else { return }
        m.bodyBytes &+= length
        m.bodyWireBytes &+= length
        m.bodyGapBytes &+= length
        m.note(.bodyGap)
        if m.decoder != nil && !m.decodeFailed {
            // A decoder cannot continue past missing bytes.
            m.decodeFailed = true
        }
    }

    func endMessage(at ts: Timestamp, complete: Bool) {
        if case .tunnel = state {} else { transition(to: .start) }
        guard let m = message else { return }
        m.lastByte = max(m.lastByte, ts)
        m.complete = complete
        m.ended = true
        finishDecoding(m)
        if complete, m.bodyBytes > 0, !m.decodeFailed, !m.decodeCapped, let decoder = m.decoder, !decoder.finishedCleanly {
            // The framing says the body is whole, but its compressed stream did not end (a
            // sender that cut it short): the decoded size counts only what was decoded.
            m.note(.bodyDecodeIncomplete)
        }
        if m.decodeFailed || m.decoder == nil {
            m.decodedBytes = m.bodyBytes
        }
        if !complete { m.note(m.kind == .request ? .requestIncomplete : .responseIncomplete) }
        setMessage(nil)
        callout { delegate.parserEnded(m) }
    }
}
