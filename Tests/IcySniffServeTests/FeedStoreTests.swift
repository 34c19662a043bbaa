import Foundation
@testable import IcySniffCore
import Testing
@testable import IcySniffServe

/// The web view's store (FeedStore): what the run appends is what the API reads back, in order,
/// whether it is still in the write buffer or already in the file; the HAR export chooses and
/// orders; the search ignores ASCII case and looks into the HAR entries made from the
/// transactions' archives; a browser's stream is woken once per burst.
@Suite struct FeedStoreTests {
    /// A store whose entries are made as a run without --keep-secrets makes them.
    static func store() throws -> FeedStore {
        let store = try #require(FeedStore())
        var options = ExportOptions()
        options.pretty = false
        store.useEntries(FeedEntries(options: options))
        return store
    }

    /// The archive of a GET of `path` on a.test, with `header` besides Host (a real
    /// `TransactionArchive`, as the feed writes them).
    static func archive(_ path: String, header: HTTPHeader? = nil) -> [UInt8] {
        let client = Endpoint(address: IPAddress(ipv4: 0x0A00_0002), port: 40000)
        let server = Endpoint(address: IPAddress(ipv4: 0x0A00_0001), port: 80)
        let t = Transaction(connection: ConnectionSnapshot(archived: 1, client: client, server: server), depth: 1)
        let m = HTTPMessage(kind: .request)
        m.method = "GET"
        m.target = Array(path.utf8)
        m.version = "HTTP/1.1"
        m.startLineParsed = true
        m.headers = HeaderFields([HTTPHeader(name: "Host", value: "a.test")] + (header.map { [$0] } ?? []))
        t.request = m
        let out = ByteBuffer()
        TransactionArchive.write(t, to: out)
        return out.array
    }

    /// Appends an item whose parts are these (lent as the sink lends its buffers); a transaction
    /// gets the archive of a GET of `path`.
    static func append(_ store: FeedStore, _ kind: FeedItem.Kind, row: String, path: String = "/", header: HTTPHeader? = nil,
                       start: Int64 = 0, page: String? = nil, connection: UInt64 = 0, open: Bool = false, response: [UInt8]? = nil) {
        let r = Array(row.utf8), e = kind == .transaction ? archive(path, header: header) : []
        r.withUnsafeBufferPointer { rb in
            e.withUnsafeBufferPointer { eb in
                let lend: (UnsafeBufferPointer<UInt8>?) -> Void = { body in
                    store.append(FeedItem(kind: kind, row: rb, archive: eb, start: Timestamp(nanoseconds: start), page: page,
                                          connection: connection, open: open, requestBody: nil, responseBody: body))
                }
                if let response { response.withUnsafeBufferPointer { lend($0) } } else { lend(nil) }
            }
        }
    }

    /// The URL of a HAR entry.
    static func url(_ entry: Any?) -> String? { ((entry as? [String: Any])?["request"] as? [String: Any])?["url"] as? String }

    static func json(_ bytes: [UInt8]) throws -> Any { try JSONSerialization.jsonObject(with: Data(bytes)) }

    @Test func recordsComeBackInOrderFromTheBufferAndFromTheFile() throws {
        let store = try Self.store()
        Self.append(store, .page, row: #"{"id":"page_1","title":"http://a.test/"}"#, page: "page_1")
        // 400 transactions of ~2 KiB: more than the 256 KiB write buffer, so most are in the file.
        let filler = String(repeating: "x", count: 2000)
        for i in 1...400 {
            Self.append(store, .transaction, row: #"{"n":\#(i),"pad":"\#(filler)"}"#, path: "/\(i)",
                        start: Int64(i), page: "page_1", connection: UInt64(i % 3 + 1), response: i % 2 == 0 ? Array("body \(i)".utf8) : nil)
        }
        #expect(store.count == 401)
        var seen: [Int] = []
        var after = 0
        while true {
            let got = store.records(after: after, limit: 150, maxBytes: 1 << 30)
            if got.count == 0 { break }
            let records = try #require(try Self.json(got.json) as? [[String: Any]])
            for r in records where r["kind"] as? String == "transaction" {
                let data = try #require(r["data"] as? [String: Any])
                seen.append(data["n"] as? Int ?? -1)
                #expect(r["page"] as? String == "page_1")
                let n = data["n"] as? Int ?? 0
                #expect((r["bodies"] as? [Int]) == [-1, n % 2 == 0 ? "body \(n)".utf8.count : -1])
            }
            after = got.last
        }
        #expect(seen == Array(1...400))
        for seq in [2, 200, 401] {
            let entry = try Self.json(try #require(store.entry(seq))) as? [String: Any]
            #expect(Self.url(entry) == "http://a.test/\(seq - 1)")
            #expect(entry?["pageref"] as? String == "page_1")
        }
        #expect(store.body(3, response: true).map { String(decoding: $0, as: UTF8.self) } == "body 2")
        #expect(store.body(2, response: true) == nil)
        #expect(store.entry(1) == nil, "a page has no HAR entry")
    }

    @Test func theHARExportHoldsTheChosenEntriesByStartWithTheirPagesAndConnections() throws {
        let store = try Self.store()
        Self.append(store, .page, row: #"{"id":"page_1"}"#, start: 10, page: "page_1")
        Self.append(store, .connection, row: #"{"id":"C1","open":"yes"}"#, start: 5, connection: 1, open: true)
        Self.append(store, .transaction, row: "{}", path: "/late", start: 30, page: "page_1", connection: 1)
        Self.append(store, .page, row: #"{"id":"page_2"}"#, start: 20, page: "page_2")
        Self.append(store, .transaction, row: "{}", path: "/early", start: 20, page: "page_2", connection: 2)
        Self.append(store, .transaction, row: "{}", path: "/other", start: 25, page: "page_2", connection: 2)
        Self.append(store, .connection, row: #"{"id":"C1","open":"no"}"#, start: 5, connection: 1)
        Self.append(store, .connection, row: #"{"id":"C2"}"#, start: 6, connection: 2)
        let har = try #require(try Self.json(store.har([3, 5])) as? [String: Any])
        let log = try #require(har["log"] as? [String: Any])
        #expect((log["entries"] as? [Any])?.map { Self.url($0) ?? "" } == ["http://a.test/early", "http://a.test/late"])
        #expect((log["entries"] as? [[String: Any]])?.map { $0["pageref"] as? String ?? "" } == ["page_2", "page_1"])
        #expect((log["pages"] as? [[String: String]])?.map { $0["id"] ?? "" } == ["page_1", "page_2"])
        // A connection's latest record: the one written when it ended.
        #expect((log["_connections"] as? [[String: String]])?.map { $0["open"] ?? $0["id"] ?? "" } == ["no", "C2"])
        #expect(String(decoding: store.ndjson([5, 3, 3, 1]), as: UTF8.self) == "{}\n{}\n", "transactions only, each once")
    }

    @Test func theSearchIgnoresASCIICaseAndLooksIntoEntries() throws {
        let store = try Self.store()
        Self.append(store, .transaction, row: #"{"url":"http://a.test/Logo.png"}"#, header: HTTPHeader(name: "X-Cache", value: "HIT"))
        Self.append(store, .transaction, row: #"{"url":"http://a.test/app.js"}"#, header: HTTPHeader(name: "x-cache", value: "miss"))
        // A secret is searched in the entry as the files show it: redacted.
        Self.append(store, .transaction, row: "{}", header: HTTPHeader(name: "Cookie", value: "session=s3cr3t"))
        Self.append(store, .connection, row: #"{"sni":"logo.test"}"#, connection: 9)
        #expect(store.search("LOGO") == [1])
        #expect(store.search("x-cache") == [1, 2])
        #expect(store.search("hit") == [1])
        #expect(store.search("nowhere").isEmpty && store.search("").isEmpty)
        #expect(store.search("session=") == [3] && store.search("s3cr3t").isEmpty)
        // Only ASCII letters are folded: a word with others is found as written.
        Self.append(store, .transaction, row: #"{"url":"http://a.test/Ünïcode"}"#)
        #expect(store.search("Ünïcode") == [5] && store.search("üNÏCODE").isEmpty)
    }

    @Test func aSubscriberIsWokenOncePerBurst() throws {
        let store = try Self.store()
        final class Count: @unchecked Sendable { var n = 0 }
        let count = Count()
        let id = store.subscribe { count.n += 1 }
        Self.append(store, .transaction, row: "{}")
        Self.append(store, .transaction, row: "{}")
        #expect(count.n == 1, "woken by the first append; the second finds it still scheduled")
        store.acknowledge(id)
        Self.append(store, .transaction, row: "{}")
        #expect(count.n == 2)
        store.acknowledge(id)
        store.finish()
        #expect(count.n == 3 && !store.isRunning, "the end of the analysis wakes it too")
        store.unsubscribe(id)
        Self.append(store, .transaction, row: "{}")
        #expect(count.n == 3)
    }
}
