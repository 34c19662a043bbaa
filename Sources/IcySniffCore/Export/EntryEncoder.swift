/// Writes one transaction as a HAR 1.2 entry object.
enum EntryEncoder {
    /// A secret replaced by its length, so sizes still add up: `[redacted 32 bytes]`.
    static func redacted(_ value: some StringProtocol) -> String { "[redacted \(value.utf8.count) bytes]" }

    static func writeEntry(_ t: Transaction, pageref: String?, to w: JSONWriter, options: ExportOptions) {
        let timings = t.timings
        w.beginObject()
        if let pageref { w.string("pageref", pageref) }
        w.plainString("startedDateTime") { timings.start.appendISO8601(to: $0, fractionDigits: 3) }
        w.number("time", timings.total)
        writeRequest(t, to: w, options: options)
        writeResponse(t, to: w, options: options)
        writeCache(t, to: w)
        w.key("timings"); w.beginObject()
        w.number("blocked", timings.blocked)
        w.number("dns", timings.dns)
        w.number("connect", timings.connect)
        w.number("send", timings.send)
        w.number("wait", timings.wait)
        w.number("receive", timings.receive)
        w.number("ssl", timings.ssl)
        w.endObject()
        // serverIPAddress is what HAR readers use (DevTools' Remote Address, haralyzer); the
        // custom field stays for readers of earlier icy-sniff HARs.
        w.plainString("serverIPAddress") { t.connection.server.address.appendText(to: $0) }
        w.plainString("_serverIPAddress") { t.connection.server.address.appendText(to: $0) }
        w.plainString("connection") { ConnectionSnapshot.appendLabel(of: t.connection.id, to: $0) }
        w.plainString("_clientIPAddress") { t.connection.client.address.appendText(to: $0) }
        w.int("_clientPort", t.connection.client.port)
        if let device = t.connection.device { w.plainString("_device") { device.appendText(to: $0) } }
        w.int("_serverPort", t.connection.server.port)
        w.int("_depth", t.depth)
        if let r = t.request { w.key("_requestTarget"); writeTarget(of: r, to: w, options: options) }
        if let stream = t.streamID { w.int("_streamId", stream) }
        if t.pushed { w.bool("_pushed", true) }
        let flags = t.allWeirds
        w.key("_flags"); w.beginArray(); for f in flags { w.string(f.rawValue) }; w.endArray()
        if flags.contains(.injectionSuspected) { w.bool(HARWriter.injectionKey, true) }
        if let tunnel = t.tunnel {
            w.key("_tunnel"); w.beginObject()
            w.int("bytesFromClient", tunnel.bytesFromClient)
            w.int("bytesFromServer", tunnel.bytesFromServer)
            w.optionalNumber("duration", tunnel.durationMilliseconds)
            w.endObject()
        }
        if let via = t.proxyTunnel { ConnectionSummary.write(via, to: w, key: "_proxyTunnel") }
        if let ws = t.webSocket { writeWebSocket(ws, to: w) }
        if !t.interimResponses.isEmpty {
            w.key("_interimResponses"); w.beginArray()
            for m in t.interimResponses {
                w.beginObject(); w.int("status", m.status); w.string("statusText", m.reason); w.endObject()
            }
            w.endArray()
        }
        if let c = t.cache { writeCacheCustom(c, validators: t.response?.headers, to: w) }
        if !flags.isEmpty { w.string("comment", flags.map(\.rawValue).joined(separator: " ")) }
        w.endObject()
    }

    /// The fields as HAR headers. A response leaves out `:status` (`leaving: .status`), as
    /// Chrome's export does: it is the entry's `status`, and HAR replayers (Playwright's
    /// `route_from_har`) refuse a response that lists it.
    static func writeHeaders(_ headers: HeaderFields, leaving left: FieldName? = nil, to w: JSONWriter, options: ExportOptions) {
        w.key("headers"); w.beginArray()
        for i in headers.indices {
            if let left, headers.id(at: i) == left { continue }
            let secret = !options.keepSecrets && (headers.id(at: i).isSecret || carriesBearerToken(headers, at: i) || carriesCredential(headers, at: i))
            let url = !options.keepSecrets && !secret && carriesURL(headers, at: i)
            // The usual field: plain ASCII, not a secret — one run of bytes.
            if !secret && !url, headers.withNameAndValueBytes(at: i, { w.nameValueObject($0, $1) }) { continue }
            w.beginObject()
            w.key("name"); w.fieldText(headers, at: i, name: true)
            if secret {
                w.key("value")
                if headers.id(at: i) != .cookie || !writeRedactedCookieHeader(headers, at: i, to: w) {
                    w.string(redact(header: headers[i], options: options))
                }
            } else if url {
                w.key("value"); w.string(redact(header: headers[i], options: options))
            } else {
                w.key("value"); w.fieldText(headers, at: i, name: false)
            }
            w.endObject()
        }
        w.endArray()
    }

    /// The Cookie field `i` redacted (`a=[redacted 3 bytes]; b=…`), written from the header bytes;
    /// false (nothing written) when the value is not ASCII, which goes through `redact` instead.
    private static func writeRedactedCookieHeader(_ headers: HeaderFields, at i: Int, to w: JSONWriter) -> Bool {
        headers.withValueBytes(at: i) { v -> Bool in
            guard isASCII(v) else { return false }
            w.composedString { w in
                var first = true
                Cookies.forEachRequestCookie(v) { name, value in
                    if !first { w.append(0x3B, 0x20) }
                    first = false
                    w.appendEscaped(name)
                    w.append(0x3D)
                    appendRedacted(count: value.count, to: w)
                }
            }
            return true
        }
    }

    /// `[redacted N bytes]`, the text `redacted(_:)` makes, appended without a String.
    static func appendRedacted(count: Int, to out: ByteBuffer) {
        out.append("[redacted ")
        JSONWriter.appendInteger(Int64(count), to: out)
        out.append(" bytes]")
    }

    /// Secret values are replaced, keeping their length visible: `[redacted 32 bytes]`; for cookies
    /// the names stay (`a=[redacted]; b=[redacted]`).
    /// The fields that carry a URL, whose secret query parameters are redacted like the entry's
    /// URL: Referer, Location, Content-Location, and HTTP/2's and HTTP/3's :path. One decision for
    /// the HAR's header list (read from the header bytes) and every other output (`redact(header:)`).
    static func isURLField(_ id: FieldName, name: UnsafeBufferPointer<UInt8>) -> Bool {
        if id == .referer || id == .location { return true }
        return id == .other && (equalsIgnoringCase(name, ":path") || equalsIgnoringCase(name, "content-location"))
    }

    /// Whether field `i` is a URL field with a query: no String for the fields that are not.
    static func carriesURL(_ headers: HeaderFields, at i: Int) -> Bool {
        let id = headers.id(at: i)
        guard id == .referer || id == .location || id == .other else { return false }
        return headers.withNameAndValueBytes(at: i) { name, value in value.contains(0x3F) && isURLField(id, name: name) }
    }

    /// A field of its own for an API key or token (`FieldName.credentialNames`).
    static func carriesCredential(_ headers: HeaderFields, at i: Int) -> Bool {
        headers.id(at: i) == .other && headers.withNameBytes(at: i) { FieldName.isCredential(name: $0) }
    }

    /// A Sec-WebSocket-Protocol field with a bearer token among its subprotocols.
    static func carriesBearerToken(_ headers: HeaderFields, at i: Int) -> Bool {
        guard headers.id(at: i) == .secWebSocketProtocol else { return false }
        return headers.withValueBytes(at: i) { containsIgnoringCase($0, "bearer") }
    }

    /// Sec-WebSocket-Protocol with each bearer token redacted: `authorization.bearer.[redacted
    /// 150 bytes]` (what follows `bearer.` is the token, JWTs with their dots included).
    static func redactSubprotocols(_ value: String) -> String {
        value.split(separator: ",", omittingEmptySubsequences: false).map { item -> String in
            let bytes = Array(item.utf8)
            let marker = Array("bearer.".utf8)
            guard bytes.count > marker.count,
                  let at = (0...(bytes.count - marker.count)).first(where: { start in
                      (0..<marker.count).allSatisfy { lowerASCII(bytes[start + $0]) == marker[$0] }
                  }) else { return String(item) }
            let end = at + marker.count
            return String(decoding: bytes[..<end], as: UTF8.self) + redacted(String(decoding: bytes[end...], as: UTF8.self))
        }.joined(separator: ",")
    }

    static func redact(header h: HTTPHeader, options: ExportOptions, readable: Bool = false) -> String {
        let id = FieldName(h.name)
        guard !options.keepSecrets else { return h.value }
        if id == .secWebSocketProtocol { return redactSubprotocols(h.value) }
        // Fields that carry a URL (HTTP/2's and HTTP/3's :path, Referer, Location,
        // Content-Location): their secret query parameters, as the entry's URL.
        var name = h.name
        if id == .other && name.withUTF8({ FieldName.isCredential(name: $0) }) { return redacted(h.value) }
        if !id.isSecret {
            return name.withUTF8 { isURLField(id, name: $0) } ? redactURL(h.value, options: options, readable: readable) : h.value
        }
        switch id {
        case .cookie:
            return Cookies.parseRequest(h.value).map { "\($0.name)=\(redacted($0.value))" }.joined(separator: "; ")
        case .setCookie:
            guard let semi = h.value.firstIndex(of: ";") else {
                let c = Cookies.parseSetCookie(h.value)
                return "\(c.name)=\(redacted(c.value))"
            }
            let c = Cookies.parseSetCookie(h.value)
            return "\(c.name)=\(redacted(c.value))\(h.value[semi...])"
        default:
            // Authorization: the scheme stays (`Bearer`, `Basic`), the credentials after it are
            // counted; a value without a scheme is counted whole.
            let parts = h.value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else { return redacted(h.value) }
            return "\(parts[0]) \(redacted(parts[1]))"
        }
    }

    /// `request.cookies`: from the header bytes when ASCII; otherwise through the wire-text String.
    static func writeRequestCookies(_ headers: HeaderFields, to w: JSONWriter, options: ExportOptions) {
        w.key("cookies"); w.beginArray()
        for i in headers.indices where headers.id(at: i) == .cookie {
            let done = headers.withValueBytes(at: i) { v -> Bool in
                guard isASCII(v) else { return false }
                Cookies.forEachRequestCookie(v) { name, value in
                    w.beginObject()
                    w.key("name"); w.string(bytes: name)
                    w.key("value")
                    if options.keepSecrets { w.string(bytes: value) } else {
                        w.composedString { appendRedacted(count: value.count, to: $0) }
                    }
                    w.endObject()
                }
                return true
            }
            if done { continue }
            for c in Cookies.parseRequest(headers.value(at: i)) {
                w.beginObject(); w.string("name", c.name); w.string("value", options.keepSecrets ? c.value : redacted(c.value)); w.endObject()
            }
        }
        w.endArray()
    }

    static func writeRequest(_ t: Transaction, to w: JSONWriter, options: ExportOptions) {
        w.key("request"); w.beginObject()
        guard let r = t.request else {
            w.string("method", "")
            w.string("url", t.url)
            w.string("httpVersion", "")
            w.key("cookies"); w.beginArray(); w.endArray()
            w.key("headers"); w.beginArray(); w.endArray()
            w.key("queryString"); w.beginArray(); w.endArray()
            w.int("headersSize", -1)
            w.int("bodySize", -1)
            w.string("comment", "no request was seen for this response")
            w.endObject()
            return
        }
        w.string("method", r.method)
        w.string("url", redactURL(t.url, options: options))
        w.string("httpVersion", r.versionText)
        writeRequestCookies(r.headers, to: w, options: options)
        writeHeaders(r.headers, to: w, options: options)
        w.key("queryString"); w.beginArray()
        // No "?" in the bytes, none in the text: a target without a query makes no String.
        for (name, value) in r.target.contains(0x3F) ? Query.parse(r.targetString) : [] {
            w.beginObject()
            w.string("name", name)
            w.string("value", !options.keepSecrets && options.secretParameters.contains(name.lowercased()) ? redacted(value) : value)
            w.endObject()
        }
        w.endArray()
        if r.body.bytes > 0 || r.headers.contains(.contentType) && (r.body.contentLength ?? 0) > 0 {
            w.key("postData"); w.beginObject()
            w.headerValue("mimeType", r.headers, .contentType, absent: .empty)
            if options.includeBodies, let body = r.body.kept {
                let mime = r.headers.first(.contentType) ?? ""
                w.key("text")
                writeBodyText(body, utf8: Self.isUTF8(body), to: w)
                // A form's fields, for forms of a size people send (a hostile 16 MiB of "a&"
                // would be 8 million objects).
                if mime.lowercased().hasPrefix("application/x-www-form-urlencoded") && body.count <= Self.maxFormBytes {
                    w.key("params"); w.beginArray()
                    for (name, value) in Query.parseForm(String(wireBytes: body)) {
                        w.beginObject(); w.string("name", name); w.string("value", value); w.endObject()
                    }
                    w.endArray()
                }
            } else {
                // HAR 1.2 requires text with mimeType; readers (mitmproxy, har2warc, harview)
                // fail without it. The body itself is kept only with --bodies.
                w.string("text", "")
                let comment = r.body.bytes == 0 ? "empty body"
                    : options.includeBodies ? "body of \(r.body.bytes) bytes not in the capture"
                    : "body of \(r.body.bytes) bytes not kept (--bodies keeps it)"
                w.string("comment", comment)
            }
            w.endObject()
        }
        w.int("headersSize", r.headersComplete ? r.headersSize : -1)
        w.int("bodySize", r.body.decodedBytes)
        w.endObject()
    }

    /// The fields of a HAR response whose head was not seen (none in the capture; an estimate):
    /// status 0, no headers, sizes -1. The caller closes the object.
    static func writeUnseenResponse(httpVersion: String, to w: JSONWriter) {
        w.int("status", 0)
        w.string("statusText", "")
        w.string("httpVersion", httpVersion)
        w.key("cookies"); w.beginArray(); w.endArray()
        w.key("headers"); w.beginArray(); w.endArray()
        w.key("content"); w.beginObject(); w.int("size", 0); w.string("mimeType", ""); w.endObject()
        w.string("redirectURL", "")
        w.int("headersSize", -1)
        w.int("bodySize", -1)
    }

    static func writeResponse(_ t: Transaction, to w: JSONWriter, options: ExportOptions) {
        w.key("response"); w.beginObject()
        guard let r = t.response else {
            writeUnseenResponse(httpVersion: "", to: w)
            w.string("_error", "no response in the capture")
            w.endObject()
            return
        }
        w.int("status", r.status)
        w.string("statusText", r.reason)
        w.string("httpVersion", r.versionText)
        w.key("cookies"); w.beginArray()
        for value in r.headers.all(.setCookie) {
            let c = Cookies.parseSetCookie(value)
            w.beginObject()
            w.string("name", c.name)
            w.string("value", options.keepSecrets ? c.value : redacted(c.value))
            if let path = c.path { w.string("path", path) }
            if let domain = c.domain { w.string("domain", domain) }
            if c.httpOnly { w.bool("httpOnly", true) }
            if c.secure { w.bool("secure", true) }
            w.endObject()
        }
        w.endArray()
        writeHeaders(r.headers, leaving: .status, to: w, options: options)
        w.key("content"); w.beginObject()
        w.int("size", r.body.decodedBytes)
        if r.body.wasDecoded && r.body.decodedBytes >= r.body.bytes { w.int("compression", r.body.decodedBytes - r.body.bytes) }
        w.headerValue("mimeType", r.headers, .contentType, absent: .empty)
        if options.includeBodies, let body = r.body.kept {
            let mime = r.headers.first(.contentType) ?? ""
            // Text as text, unless JSON would escape it to more than base64's 4/3 (control
            // characters become six bytes each: 16 MiB of NULs was 96 MiB of JSON in one buffer).
            if MimeType.isText(mime), JSONWriter.escapedLength(body) <= body.count / 3 * 4 + 64, Self.isUTF8(body) {
                w.key("text")
                writeBodyText(body, utf8: true, to: w)
            } else {
                w.plainString("text") { out in
                    // In slices of whole base64 groups, the writer drained between them.
                    body.withUnsafeBufferPointer { b in
                        for start in stride(from: 0, to: b.count, by: Self.bodySlice) {
                            Base64.append(UnsafeBufferPointer(rebasing: b[start..<min(b.count, start + Self.bodySlice)]), to: out)
                            out.drainIfLarge()
                        }
                    }
                }
                w.string("encoding", "base64")
            }
            if r.body.truncated { w.string("comment", "body cut at the in-memory cap; size is exact") }
        }
        w.endObject()
        writeURLHeader("redirectURL", r.headers, .location, absent: .empty, to: w, options: options)
        w.int("headersSize", r.headersComplete ? r.headersSize : -1)
        w.int("bodySize", r.body.bytes)
        w.endObject()
    }

    /// A WebSocket's messages as Chrome's HAR export lists them (`_webSocketMessages`: `type`
    /// send/receive, `time` in seconds since the epoch, `opcode`, `data`, binary in base64), each
    /// with its `_size` (the data is kept only with --bodies), and the socket's totals, close and
    /// extensions in `_webSocket`.
    static func writeWebSocket(_ ws: WebSocketLog, to w: JSONWriter) {
        w.key("_webSocketMessages"); w.beginArray()
        for m in ws.messages {
            w.beginObject()
            w.string("type", m.fromClient ? "send" : "receive")
            w.number("time", m.time.secondsSinceEpoch, decimals: 6)
            w.int("opcode", m.opcode)
            if let data = m.data, !data.isEmpty, m.opcode != 1 {
                w.plainString("data") { out in data.withUnsafeBufferPointer { Base64.append($0, to: out) } }
            } else if let data = m.data, !data.isEmpty {
                w.key("data")
                writeBodyText(data, utf8: isUTF8(data), to: w)
            } else {
                w.string("data", "")
            }
            w.int("_size", m.size)
            if m.compressed { w.int("_wireSize", m.wireSize) }
            if m.truncated { w.bool("_truncated", true) }
            if let problem = m.problem { w.string("_problem", problem.rawValue) }
            w.endObject()
        }
        w.endArray()
        w.key("_webSocket"); w.beginObject()
        if let e = ws.extensions { w.string("extensions", e) }
        if let p = ws.subprotocol { w.string("protocol", p) }
        for (key, d) in [("sent", ws.sent), ("received", ws.received)] {
            w.key(text: key); w.beginObject()
            w.int("messages", d.messages)
            w.int("bytes", d.bytes)
            w.int("wireBytes", d.wireBytes)
            w.int("pings", d.pings)
            w.int("pongs", d.pongs)
            w.endObject()
        }
        if ws.dropped > 0 { w.int("messagesNotListed", ws.dropped) }
        if let byClient = ws.closedByClient {
            w.key("close"); w.beginObject()
            w.string("by", byClient ? "client" : "server")
            if let code = ws.closeCode { w.int("code", code) } else { w.key("code"); w.null() }
            if let reason = ws.closeReason { w.string("reason", reason) }
            w.endObject()
        }
        w.endObject()
    }

    static func writeCache(_ t: Transaction, to w: JSONWriter) {
        w.key("cache"); w.beginObject()
        if let c = t.cache, c.storable, let expires = c.expires {
            w.key("afterRequest"); w.beginObject()
            w.plainString("expires") { expires.appendISO8601(to: $0, fractionDigits: 3) }
            w.plainString("lastAccess") { c.responseTime.appendISO8601(to: $0, fractionDigits: 3) }
            w.headerValue("eTag", t.response?.headers, .etag, absent: .empty)
            w.int("hitCount", 0)
            w.endObject()
        }
        w.endObject()
    }

    /// `_cache`: the assessment, and the response's validators (its first ETag and Last-Modified
    /// fields, `validators`).
    static func writeCacheCustom(_ c: CacheAssessment, validators: HeaderFields?, to w: JSONWriter) {
        w.key("_cache"); w.beginObject()
        let verdict = c.verdictText.text
        w.key("verdict"); w.string(bytes: UnsafeBufferPointer(start: verdict.utf8Start, count: verdict.utf8CodeUnitCount))
        w.bool("storable", c.storable)
        w.optionalNumber("freshnessLifetime", c.freshnessLifetime)
        w.string("lifetimeSource", c.lifetimeSource.rawValue)
        w.number("age", c.age)
        w.optionalNumber("freshFor", c.freshFor)
        w.bool("mustRevalidate", c.mustRevalidate)
        w.headerValue("etag", validators, .etag)
        w.headerValue("lastModified", validators, .lastModified)
        w.bool("conditional", c.conditional)
        w.bool("notModified", c.notModified)
        w.bool("avoidable", c.avoidable)
        if c.dependsOnEvictedEntry { w.bool("dependsOnEvictedEntry", true) }
        w.endObject()
    }

    /// A header that carries a URL (Referer, Location) as a string value, its secret query
    /// parameters redacted: the header buffer's bytes as they are when there is no query (the
    /// common case), else the redacted text.
    static func writeURLHeader(_ k: StaticString, _ headers: HeaderFields?, _ id: FieldName, absent: JSONWriter.Absent = .null,
                               to w: JSONWriter, options: ExportOptions) {
        guard !options.keepSecrets, let headers, let value = headers.first(id), value.utf8.contains(0x3F) else {
            return w.headerValue(k, headers, id, absent: absent)
        }
        w.string(k, redactURL(value, options: options))
    }

    /// A request's target as a string value, redacted as `redactURL` redacts it: a target without
    /// a query (or with secrets kept) is written from its text's bytes (`withTargetUTF8`).
    static func writeTarget(of m: HTTPMessage, to w: JSONWriter, options: ExportOptions) {
        let written = m.withTargetUTF8 { t -> Bool in
            guard options.keepSecrets || !t.contains(0x3F) else { return false }
            w.string(bytes: t)
            return true
        }
        if !written { w.string(redactURL(m.targetString, options: options)) }
    }

    /// `url` with the values of its secret query parameters redacted. In the HAR and NDJSON the
    /// marker is percent-encoded (`token=%5Bredacted%2014%20bytes%5D`: the URL stays a URL that
    /// replayers accept); `readable` writes it as people read it (`token=[redacted 14 bytes]`),
    /// for the table, TSV, CSV, `-V`, `report` and `diff`. A value that is a marker already (a
    /// HAR icy-sniff wrote, read back by `diff`) is kept as it is, not counted again.
    static func redactURL(_ url: String, options: ExportOptions, readable: Bool = false) -> String {
        guard !options.keepSecrets else { return url }
        guard let q = url.firstIndex(ofByte: 0x3F) else { return url }
        let query = url[url.index(after: q)...]
        var changed = false
        let parts = query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if kv.count == 2, options.secretParameters.contains(Query.percentDecode(String(kv[0])).lowercased()) {
                changed = true
                let value = Query.percentDecode(String(kv[1]))
                let marker = value.hasPrefix("[redacted ") && value.hasSuffix(" bytes]") ? value : redacted(value)
                return "\(kv[0])=" + (readable ? marker : marker.unicodeScalars.map { c in
                    c == "[" ? "%5B" : c == "]" ? "%5D" : c == " " ? "%20" : String(c)
                }.joined())
            }
            return String(part)
        }
        return changed ? String(url[...q]) + parts.joined(separator: "&") : url
    }
}

enum MimeType {
    static func isText(_ mime: String) -> Bool {
        let m = mime.lowercased()
        return m.hasPrefix("text/") || m.contains("json") || m.contains("xml") || m.contains("javascript")
            || m.contains("x-www-form-urlencoded") || m.contains("ecmascript")
    }
}
