/// One transaction as a flat JSON object (docs/OUTPUT.md, NDJSON, lists the fields).
enum NDJSONEncoder {
    static func write(_ t: Transaction, to w: JSONWriter, options: ExportOptions) {
        let req = t.request, resp = t.response
        // Read once: each read of a struct property of the transaction or of a message copied
        // it, retaining what it holds (57 reference-count calls a line before). Of the connection,
        // the plain values only: the snapshot, captured by the closures below, was copied (its
        // strings retained and released) for each of them.
        let connectionID = t.connection.id, client = t.connection.client, server = t.connection.server
        let requestHeaders = req?.headers, responseHeaders = resp?.headers
        w.beginObject()
        w.plainString("ts") { t.startTime.appendISO8601(to: $0, fractionDigits: 6) }
        if !t.captureName.isEmpty { w.string("capture", t.captureName) }
        w.plainString("connection") { ConnectionSnapshot.appendLabel(of: connectionID, to: $0) }
        w.int("depth", t.depth)
        w.plainString("client_ip") { client.address.appendText(to: $0) }
        w.int("client_port", client.port)
        if let device = t.connection.device { w.plainString("device") { device.appendText(to: $0) } }
        w.plainString("server_ip") { server.address.appendText(to: $0) }
        w.int("server_port", server.port)
        w.optionalString("method", req?.method)
        w.string("host", t.host)
        w.key("target"); if let req { EntryEncoder.writeTarget(of: req, to: w, options: options) } else { w.null() }
        w.optionalString("url", req.map { _ in EntryEncoder.redactURL(t.url, options: options) })
        w.string("protocol", t.protocolName)
        w.optionalString("request_version", req?.versionText)
        w.headerValue("user_agent", requestHeaders, .userAgent)
        EntryEncoder.writeURLHeader("referrer", requestHeaders, .referer, to: w, options: options)
        w.key("request_body_len"); if let req { w.int(req.body.decodedBytes) } else { w.null() }
        w.key("status"); if let resp { w.int(resp.status) } else { w.null() }
        w.optionalString("reason", resp?.reason)
        w.optionalString("response_version", resp?.versionText)
        w.headerValue("content_type", responseHeaders, .contentType)
        w.headerValue("content_encoding", responseHeaders, .contentEncoding)
        w.key("response_body_len"); if let resp { w.int(resp.body.decodedBytes) } else { w.null() }
        w.key("response_encoded_len"); if let resp { w.int(resp.body.bytes) } else { w.null() }
        EntryEncoder.writeURLHeader("location", responseHeaders, .location, to: w, options: options)
        w.number("time_ms", t.timings.total)
        // Phases that did not happen are null, not HAR's -1, so that AVG() and friends in SQL
        // engines count only the transactions that had them.
        if t.timings.dns < 0 { w.key("dns_ms"); w.null() } else { w.number("dns_ms", t.timings.dns) }
        if t.timings.connect < 0 { w.key("connect_ms"); w.null() } else { w.number("connect_ms", t.timings.connect) }
        w.number("send_ms", t.timings.send)
        w.number("wait_ms", t.timings.wait)
        w.number("receive_ms", t.timings.receive)
        if let c = t.cache {
            w.key("cache"); c.withLabelUTF8 { w.string(bytes: $0) }
            w.bool("cache_storable", c.storable)
            w.optionalNumber("cache_lifetime", c.freshnessLifetime)
            w.string("cache_lifetime_source", c.lifetimeSource.rawValue)
            w.number("cache_age", c.age)
            w.optionalNumber("cache_fresh_for", c.freshFor)
            w.bool("cache_avoidable", c.avoidable)
        }
        w.optionalString("tls_version", t.connection.tlsVersion)
        w.optionalString("sni", t.connection.sni)
        if t.timings.ssl < 0 { w.key("ssl_ms"); w.null() } else { w.number("ssl_ms", t.timings.ssl) }
        w.key("stream"); if let stream = t.streamID { w.int(stream) } else { w.null() }
        if t.pushed { w.bool("pushed", true) }
        if let ws = t.webSocket {
            w.int("ws_messages_sent", ws.sent.messages)
            w.int("ws_messages_received", ws.received.messages)
            w.int("ws_bytes_sent", ws.sent.bytes)
            w.int("ws_bytes_received", ws.received.bytes)
            w.key("ws_close_code"); if let code = ws.closeCode { w.int(code) } else { w.null() }
        }
        w.key("flags"); w.beginArray(); for f in t.allWeirds { w.string(f.rawValue) }; w.endArray()
        w.endObject()
    }
}
