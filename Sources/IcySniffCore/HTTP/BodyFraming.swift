/// How a message's body is delimited (RFC 9112 §6.3), decided once its header section is complete.
struct BodyFraming {
    enum Kind { case none, length, chunked, untilClose, tunnel }
    var kind: Kind
    var length: UInt64? = nil
    var weirds: [Weird] = []

    static func decide(for m: HTTPMessage) -> BodyFraming {
        var weirds: [Weird] = []
        if m.kind == .response {
            let method = m.requestMethod ?? ""
            // §6.3 item 1: HEAD, 1xx, 204 and 304 replies have no body.
            if method == "HEAD" || (m.status >= 100 && m.status < 200 && m.status != 101) || m.status == 204 || m.status == 304 {
                return BodyFraming(kind: .none)
            }
            // §6.3 item 2: a 2xx reply to CONNECT, and 101, turn the connection into a tunnel.
            if method == "CONNECT" && m.status >= 200 && m.status < 300 { return BodyFraming(kind: .tunnel) }
            if m.status == 101 { return BodyFraming(kind: .tunnel) }
        }
        let headers = m.headers
        let hasLength = headers.contains(.contentLength)
        if isJustChunked(headers) {
            // The usual Transfer-Encoding: one line saying `chunked` (read from its bytes).
            if hasLength { weirds.append(.contentLengthAndChunked); weirds.append(.smugglingSuspected) }
            return BodyFraming(kind: .chunked, weirds: weirds)
        }
        if let te = headers.combined(.transferEncoding) {
            let codings = te.split(separator: ",").map { $0.trimmingASCIIWhitespace().lowercased() }.filter { !$0.isEmpty }
            if hasLength {
                // §6.3 item 3: Transfer-Encoding overrides Content-Length; a sign of smuggling.
                weirds.append(.contentLengthAndChunked)
                weirds.append(.smugglingSuspected)
            }
            let chunkedCount = codings.filter { $0 == "chunked" }.count
            if chunkedCount > 1 { weirds.append(.chunkedTwice) }
            if codings.contains(where: { !Self.knownCodings.contains($0) }) { weirds.append(.unknownTransferEncoding) }
            if codings.last == "chunked" {
                return BodyFraming(kind: .chunked, weirds: weirds)
            }
            if !codings.isEmpty {
                if chunkedCount > 0 {
                    // Chunked, but not last: a front end that honours the chunking and one that
                    // does not frame the request differently.
                    weirds.append(.chunkedNotFinal)
                    if m.kind == .request { weirds.append(.smugglingSuspected) }
                } else if !weirds.contains(.unknownTransferEncoding) {
                    weirds.append(.unknownTransferEncoding)
                }
                // §6.3 item 4: a response is read until close; a request cannot be framed.
                return BodyFraming(kind: m.kind == .response ? .untilClose : .none, weirds: weirds)
            }
        }
        if hasLength {
            // §6.3 item 5: a list of identical values is one value; anything else is invalid.
            var value: UInt64? = nil
            var invalid = false
            var conflicting = false
            var overflow = false
            var leadingZeros = false
            var elements = 0
            for i in headers.indices where headers.id(at: i) == .contentLength {
                headers.withValueBytes(at: i) { line in
                    var k = 0
                    while k <= line.count {
                        // One comma-separated element, trimmed of whitespace.
                        var end = k
                        while end < line.count && line[end] != 0x2C { end += 1 }
                        let digits = trimmingOWS(line, k, end)
                        var v: UInt64 = 0
                        var ok = !digits.isEmpty
                        var tooLarge = false
                        for j in digits {
                            let c = line[j]
                            guard isDigit(c) else { ok = false; break }
                            let (times10, o1) = v.multipliedReportingOverflow(by: 10)
                            let (sum, o2) = times10.addingReportingOverflow(UInt64(c - 0x30))
                            if o1 || o2 { tooLarge = true } else { v = sum }
                        }
                        if ok && (tooLarge || v > UInt64(Int64.max)) {
                            // No body is that long: an overflow probe, not a length.
                            overflow = true
                        } else if !ok {
                            invalid = true
                        } else {
                            elements += 1
                            if digits.count > 1 && line[digits.first!] == 0x30 { leadingZeros = true }
                            if let existing = value, existing != v { conflicting = true }
                            if value == nil { value = v }
                        }
                        k = end + 1
                    }
                }
            }
            if conflicting { weirds.append(.conflictingContentLength); weirds.append(.smugglingSuspected) }
            if invalid { weirds.append(.badContentLength) }
            if overflow { weirds.append(.contentLengthOverflow) }
            if leadingZeros { weirds.append(.contentLengthLeadingZeros) }
            if elements > 1 && !conflicting { weirds.append(.duplicateContentLength) }
            if let value, !invalid, !conflicting, !overflow {
                return BodyFraming(kind: .length, length: value, weirds: weirds)
            }
            if invalid || conflicting || overflow {
                // Unframeable: a request is taken as bodiless (what follows parses as the next
                // request); a response runs until close.
                if m.kind == .request { return BodyFraming(kind: .none, weirds: weirds) }
                return BodyFraming(kind: .untilClose, weirds: weirds)
            }
        }
        if m.kind == .request { return BodyFraming(kind: .none, weirds: weirds) }
        return BodyFraming(kind: .untilClose, weirds: weirds)
    }

    /// What makes a message's length unknowable (a request is then taken as bodiless, and its
    /// body, if it had one, comes where the next request should start).
    static let unframeable: Set<Weird> = [.badContentLength, .conflictingContentLength, .contentLengthOverflow, .chunkedNotFinal,
                                          .unknownTransferEncoding]

    /// The transfer codings of the IANA registry (and the x- aliases RFC 9112 §7.2 names).
    static let knownCodings: Set<String> = ["chunked", "compress", "deflate", "gzip", "x-gzip", "x-compress", "identity"]

    /// Exactly one Transfer-Encoding line, whose value is `chunked` (any case, optional whitespace).
    private static func isJustChunked(_ headers: HeaderFields) -> Bool {
        var line: Int? = nil
        for i in headers.indices where headers.id(at: i) == .transferEncoding {
            if line != nil { return false }
            line = i
        }
        guard let line else { return false }
        return headers.withValueBytes(at: line) { v in
            equalsIgnoringCase(UnsafeBufferPointer(rebasing: v[trimmingOWS(v, 0, v.count)]), "chunked")
        }
    }
}
