import IcySniffCore
import NIOConcurrencyHelpers
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// What the web view's server lets in, decided before a request is routed: the Host it answers,
/// the sites it answers, the numbers its queries may hold, and the limits that keep any client —
/// a page on another site included — from growing the server's memory.
///
/// Any web page the user visits can make the browser send requests to 127.0.0.1 (`<img src>`,
/// `<script src>`, `fetch` in no-cors mode), so every request is treated as hostile until these
/// checks pass: a page on another site may reach the server but must not read from it, crash it
/// or make it hold memory.
enum RequestGuard {
    /// The server's limits. Each one that bites answers with a status and a line that names it.
    enum Limits {
        /// Connections open at once; more are closed as they are accepted.
        static let connections = 256
        /// Event streams (`/api/events`) open at once; more are answered 503.
        static let eventStreams = 64
        /// A request's head and body must arrive within this many seconds of its first byte, and a
        /// connection with no request in flight is closed after as long idle.
        static let requestSeconds: Int64 = 30
        /// The one route that takes a body (`POST /api/export.*`: the seqs to export) takes at
        /// most this many bytes; every other route takes none.
        static let exportBody = 16 << 20
        /// Bytes of request bodies buffered by all connections together.
        static let bodiesInFlight = 32 << 20
        /// The socket buffer of one response above which the server stops writing to it (an
        /// event stream then skips records, as docs/WEBVIEW.md says), and the size of one event.
        static let writeHigh = 256 << 10, writeLow = 64 << 10, eventBytes = 64 << 10
    }

    /// A count the server's connections share under a limit: the connections open, the event
    /// streams, the bytes of request bodies being received. One lock for each; taken on the
    /// event loop, given back when a connection or a request is done with it.
    final class Allowance: Sendable {
        private let used = NIOLockedValueBox(0)
        let limit: Int
        init(_ limit: Int) { self.limit = limit }

        /// Takes `n` more when they fit under the limit; false (nothing taken) when not.
        func take(_ n: Int = 1) -> Bool {
            used.withLockedValue { used in
                guard used + n <= limit else { return false }
                used += n
                return true
            }
        }

        func give(_ n: Int = 1) { used.withLockedValue { $0 -= n } }
    }

    // MARK: The Host header (DNS rebinding)

    /// Is `host` (an address the server is told to listen on) the loopback: `localhost`, an
    /// IPv4 address in 127.0.0.0/8 or ::1, written as an address (never a name that merely
    /// starts with `127.`)?
    static func isLoopbackAddress(_ host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { $0.dropLast().allSatisfy { $0 == 0 } && $0.last == 1 }
        }
        return false
    }

    /// Is a Host header's value (`name[:port]`, `[v6]:port`) this server on the loopback: a
    /// loopback literal or `localhost`, with the serving port (none only for port 80)? A page on a
    /// rebinding name (`127.0.0.1.nip.io`, `127.attacker.example`) names another host.
    static func isLoopbackHost(_ value: String, port: Int) -> Bool {
        var name = Substring(value), portText: Substring? = nil
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return false }
            name = value[value.index(after: value.startIndex)..<close]
            let rest = value[value.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":" else { return false }
                portText = rest.dropFirst()
            }
            guard name.contains(":") else { return false }   // brackets hold an IPv6 address only
        } else if let colon = value.firstIndex(of: ":") {
            name = value[..<colon]
            portText = value[value.index(after: colon)...]
        }
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  Int(portText) == port else { return false }
        } else if port != 80 {
            return false
        }
        return !name.isEmpty && isLoopbackAddress(String(name))
    }

    // MARK: Fetch metadata (other sites)

    /// A request another site's page made (Fetch Metadata: `Sec-Fetch-Site` `cross-site` or
    /// `same-site`; a page on another port of this host is same-site), other than the user
    /// following a link to the page: such a request is refused before it is read. Browsers that
    /// send no `Sec-Fetch-Site` are left to the Host check and the response headers (CORP
    /// same-origin, no CORS: nothing readable).
    static func isFromAnotherSite(_ headers: HTTPHeaders, method: HTTPMethod) -> Bool {
        guard let site = headers.first(name: "sec-fetch-site")?.lowercased(), site == "cross-site" || site == "same-site" else {
            return false
        }
        let mode = headers.first(name: "sec-fetch-mode")?.lowercased()
        let destination = headers.first(name: "sec-fetch-dest")?.lowercased()
        let navigation = mode == "navigate" && (method == .GET || method == .HEAD)
            && (destination == nil || destination == "document")
        return !navigation
    }

    // MARK: Query parameters

    /// A request's query, as sent: every name with every value, in order.
    struct Parameters {
        let pairs: [(String, String)]

        init(query: Substring) {
            pairs = query.isEmpty ? [] : Query.parseForm(String(query))
        }

        /// The value of `name` (nil when absent); a name given twice is a bad request.
        func value(_ name: String) throws(BadParameter) -> String? {
            var found: String? = nil
            for (n, v) in pairs where n == name {
                if found != nil { throw BadParameter(message: "\(name) is given more than once") }
                found = v
            }
            return found
        }

        /// `name` as a whole number of at most 15 digits in `range` (`fallback` when absent); above
        /// the range, `clampAbove` says whether it is cut to the range's top (a limit) or refused.
        func number(_ name: String, default fallback: Int, in range: ClosedRange<Int>, clampAbove: Bool = false) throws(BadParameter) -> Int {
            guard let text = try value(name) else { return fallback }
            guard let n = RequestGuard.wholeNumber(Substring(text)) else {
                throw BadParameter(message: "\(name) must be a whole number, not \"\(text.prefix(40))\"")
            }
            if n < range.lowerBound { throw BadParameter(message: "\(name) is at least \(range.lowerBound)") }
            if n > range.upperBound {
                if clampAbove { return range.upperBound }
                throw BadParameter(message: "\(name) is at most \(range.upperBound)")
            }
            return n
        }
    }

    /// `text` as a whole number: ASCII digits only, at least one; past 15 significant digits
    /// `Int.max` (15 fit any Int with room to add to it; more is beyond any record count). Nil
    /// for anything else (a sign, a space, an exponent, an escape).
    static func wholeNumber(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let digits = text.drop { $0 == "0" }
        return digits.count > 15 ? Int.max : Int(digits.isEmpty ? "0" : digits)!
    }

    struct BadParameter: Error {
        var message: String
    }
}
