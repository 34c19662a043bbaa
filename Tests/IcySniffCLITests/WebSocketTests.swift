import Foundation
import Testing

/// WebSocket messages on a real capture (captures/websocket-sample.pcap, recorded with
/// scripts/record-websocket-sample: the `websockets` library's server and client, permessage-
/// deflate with and without context takeover, no compression, and TLS 1.3 with its key log).
/// The oracle is what the library itself sent and received (captures/websocket-sample.json):
/// every message, in order, its type, size and text; and each socket's close.
@Suite struct WebSocketTests {
    let capture = CLI.capture("websocket-sample.pcap")
    let keys = CLI.capture("websocket-sample.keys")

    struct Expected {
        var path: String
        var messages: [(type: String, opcode: Int, size: Int, text: String?)]
        var close: [String: Any]
    }

    /// The library's record, as `_webSocketMessages` would list it: the client's sends and the
    /// echoes interleaved in the order they crossed the wire (each send answered before the next).
    func expected() throws -> [Expected] {
        let data = try Data(contentsOf: URL(fileURLWithPath: CLI.capture("websocket-sample.json")))
        let runs = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        return try runs.map { run in
            let sent = try #require(run["sent"] as? [[String: Any]])
            let received = try #require(run["received"] as? [[String: Any]])
            var messages: [(String, Int, Int, String?)] = []
            for i in 0..<max(sent.count, received.count) {
                for (type, list) in [("send", sent), ("receive", received)] where i < list.count {
                    messages.append((type, list[i]["opcode"] as? Int ?? -1, list[i]["size"] as? Int ?? -1, list[i]["text"] as? String))
                }
            }
            let uri = try #require(run["uri"] as? String)
            return Expected(path: String(uri[try #require(uri.range(of: "/", options: [], range: uri.index(uri.startIndex, offsetBy: 6)..<uri.endIndex)).lowerBound...]),
                            messages: messages, close: try #require(run["close"] as? [String: Any]))
        }
    }

    @Test func everyMessageAsTheLibrarySentIt() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--har", "--bodies", "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let expected = try expected()
        #expect(entries.count == expected.count)
        for (entry, want) in zip(entries, expected) {
            let url = try #require((entry["request"] as? [String: Any])?["url"] as? String)
            #expect(url.hasSuffix(want.path))
            let messages = try #require(entry["_webSocketMessages"] as? [[String: Any]], "\(url)")
            #expect(messages.count == want.messages.count, "\(url)")
            for (m, w) in zip(messages, want.messages) {
                #expect(m["type"] as? String == w.type && m["opcode"] as? Int == w.opcode && m["_size"] as? Int == w.size,
                        "\(url): \(m) against \(w)")
                let text = try #require(m["data"] as? String)
                if let t = w.text { #expect(text == t, "\(url)") }
                if w.opcode == 2 { #expect(Data(base64Encoded: text)?.count == w.size, "binary data in base64") }
                if w.opcode == 1 { #expect(text.utf8.count == w.size, "the whole text, inflated") }
                #expect(m["_problem"] == nil, "\(url): \(m)")
                #expect((m["time"] as? Double ?? 0) > 1.7e9, "seconds since the epoch")
            }
            let socket = try #require(entry["_webSocket"] as? [String: Any])
            let close = try #require(socket["close"] as? [String: Any])
            #expect(close["by"] as? String == want.close["by"] as? String)
            #expect(close["code"] as? Int == want.close["code"] as? Int)
            #expect(close["reason"] as? String == want.close["reason"] as? String)
            let sent = try #require(socket["sent"] as? [String: Any])
            #expect(sent["messages"] as? Int == want.messages.filter { $0.type == "send" }.count)
            #expect(sent["bytes"] as? Int == want.messages.filter { $0.type == "send" }.map(\.size).reduce(0, +))
        }
        // The first socket's ping is counted, with its pong; the TLS one was decrypted.
        let pings = ((entries.first?["_webSocket"] as? [String: Any])?["sent"] as? [String: Any])?["pings"] as? Int
        #expect(pings == 1)
        #expect((entries.last?["request"] as? [String: Any])?["url"] as? String == "wss://127.0.0.1:18765/secure", "a WebSocket's scheme")
        #expect((entries.first?["request"] as? [String: Any])?["url"] as? String == "ws://127.0.0.1:18765/chat")
    }

    @Test func withoutBodiesMessagesAreListedWithTheirSizesOnly() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--har", "--quiet"])
        let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let messages = entries.flatMap { $0["_webSocketMessages"] as? [[String: Any]] ?? [] }
        #expect(messages.count == (try expected()).map(\.messages.count).reduce(0, +))
        #expect(messages.allSatisfy { $0["data"] as? String == "" && ($0["_size"] as? Int ?? 0) > 0 })
    }

    @Test func tablesCountMessagesAndBytes() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--format", "tsv", "--fields", "url,type,ws_messages,ws_bytes"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.text.split(separator: "\n").dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let expected = try expected()
        #expect(rows.map { $0[1] } == Array(repeating: "websocket", count: expected.count))
        #expect(rows.map { Int($0[2]) } == expected.map { $0.messages.count })
        #expect(rows.map { Int($0[3]) } == expected.map { $0.messages.map(\.size).reduce(0, +) })
        let nd = try CLI.run(["-r", capture, "--keylog", keys, "--format", "ndjson"])
        let first = try #require(try JSONSerialization.jsonObject(with: Data(nd.text.split(separator: "\n")[0].utf8)) as? [String: Any])
        #expect(first["ws_messages_sent"] as? Int == 7 && first["ws_close_code"] as? Int == 1000)
    }

    @Test func verboseShowsEachMessage() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "-V"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.text.contains("→ send     text    11 bytes (10 compressed)  hello again"), "\(r.text)")
        #expect(r.text.contains("closed by the server 1001 going away"))
    }

    @Test func oneRowPerMessageForTools() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--websocket-messages", "--bodies"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try r.text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let expected = try expected()
        #expect(rows.count == expected.map(\.messages.count).reduce(0, +))
        let first = expected[0].messages
        #expect(rows.prefix(first.count).map { $0["direction"] as? String } == first.map { $0.type })
        #expect(rows.prefix(first.count).map { $0["size"] as? Int } == first.map { $0.size })
        #expect(rows[0]["data"] as? String == "hello" && rows[0]["compressed"] as? Bool == true)
        let binary = try #require(rows.first { $0["opcode"] as? Int == 2 })
        #expect(binary["encoding"] as? String == "base64" && binary["type"] as? String == "binary")
        #expect(Set(rows.compactMap { $0["connection"] as? String }).count == 4)
        // Without --bodies: sizes, no data. Refused with another format.
        let bare = try CLI.run(["-r", capture, "--keylog", keys, "--format", "websocket"])
        #expect(!bare.text.contains("\"data\"") && bare.text.split(separator: "\n").count == rows.count)
        let both = try CLI.run(["-r", capture, "--websocket-messages", "--har"])
        #expect(both.status == 64 && both.stderr.contains("--websocket-messages"))
    }
}
