import Foundation
@testable import IcySniffCore
import NIOHTTP1
import Testing
@testable import IcySniffServe

/// What the web view's server lets in (RequestGuard, issue 51): the Host names it answers, the
/// other sites it refuses, the numbers its queries take; and the store's records at any cursor.
@Suite struct RequestGuardTests {
    @Test func onlyTheLoopbacksOwnNamesAtTheServingPort() {
        for good in ["127.0.0.1:8080", "127.1.2.3:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080", "[0:0:0:0:0:0:0:1]:8080"] {
            #expect(RequestGuard.isLoopbackHost(good, port: 8080), "\(good)")
        }
        #expect(RequestGuard.isLoopbackHost("127.0.0.1", port: 80), "port 80 may be left out")
        for bad in ["127.0.0.1.nip.io:8080", "127.attacker.example:8080", "[::1].evil:8080", "[::1]evil:8080", "localhost.evil:8080",
                    "127.0.0.1:8081", "127.0.0.1", "127.0.0.1:", "127.0.0.1:08080x", "10.0.0.1:8080", "[::2]:8080", "[127.0.0.1]:8080",
                    "", ":8080", "127.0.0.1:8080:8080", "0x7f.1:8080", "127.1:8080"] {
            #expect(!RequestGuard.isLoopbackHost(bad, port: 8080), "\(bad)")
        }
        #expect(WebServer.isLoopback("127.0.0.1") && WebServer.isLoopback("::1") && WebServer.isLoopback("localhost"))
        #expect(!WebServer.isLoopback("127.attacker.example") && !WebServer.isLoopback("0.0.0.0"))
    }

    @Test func anotherSitesRequestsAreRefusedButALinkToThePageIsNot() {
        func headers(_ pairs: [(String, String)]) -> HTTPHeaders { HTTPHeaders(pairs) }
        #expect(RequestGuard.isFromAnotherSite(headers([("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "image")]), method: .GET))
        #expect(RequestGuard.isFromAnotherSite(headers([("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "cors")]), method: .GET))
        #expect(RequestGuard.isFromAnotherSite(headers([("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate")]), method: .POST))
        #expect(RequestGuard.isFromAnotherSite(headers([("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "iframe")]), method: .GET))
        #expect(!RequestGuard.isFromAnotherSite(headers([("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]), method: .GET))
        #expect(!RequestGuard.isFromAnotherSite(headers([("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors")]), method: .GET))
        #expect(!RequestGuard.isFromAnotherSite(headers([("Sec-Fetch-Site", "none")]), method: .GET))
        #expect(!RequestGuard.isFromAnotherSite(headers([]), method: .GET), "curl and older browsers send none")
    }

    @Test func numbersAreWholeBoundedAndGivenOnce() throws {
        func number(_ query: Substring, clamp: Bool = false) -> Result<Int, RequestGuard.BadParameter> {
            Result { () throws(RequestGuard.BadParameter) -> Int in
                try RequestGuard.Parameters(query: query).number("n", default: 7, in: 1...50_000, clampAbove: clamp)
            }
        }
        #expect(try number("").get() == 7 && number("other=1").get() == 7)
        #expect(try number("n=1").get() == 1 && number("n=00042").get() == 42 && number("n=50000").get() == 50_000)
        #expect(try number("n=50001", clamp: true).get() == 50_000 && number("n=9223372036854775808", clamp: true).get() == 50_000)
        for bad in ["n=", "n=0", "n=-3", "n=abc", "n=1e3", "n=0x10", "n=+1", "n=%201", "n=1.5", "n=1&n=2", "n=50001",
                    "n=9223372036854775807", "n=99999999999999999999999"] {
            #expect(throws: RequestGuard.BadParameter.self, "\(bad)") { try number(Substring(bad)).get() }
        }
        #expect(WebServer.seq("12") == 12 && WebServer.seq("9223372036854775807") == nil && WebServer.seq("-1") == nil && WebServer.seq("") == nil)
    }

    /// A cursor past the last record, or before the first, reads within the records and numbers
    /// them from where it reads (Int.max overflowed, -3 numbered the first record -2).
    @Test func recordsAtAnyCursorAreNumberedRight() throws {
        let store = try FeedStoreTests.store()
        for i in 1...5 { FeedStoreTests.append(store, .transaction, row: #"{"n":\#(i)}"#, path: "/\(i)", start: Int64(i), page: nil, connection: 1, response: nil) }
        for after in [Int.max, Int.max - 1, 999_999_999_999_999, 5, 6] {
            let got = store.records(after: after, limit: 5000)
            #expect(got.count == 0 && got.last == 5, "\(after)")
        }
        let got = store.records(after: -3, limit: Int.max)
        let records = try #require(try FeedStoreTests.json(got.json) as? [[String: Any]])
        #expect(records.map { $0["seq"] as? Int } == [1, 2, 3, 4, 5] && got.last == 5)
        #expect(store.records(after: 3, limit: Int.max).last == 5)
    }
}
