/// Groups HAR entries into pages, honestly and so that every HAR with entries has at least one
/// page (har2tree and others need `pages[0]`). Works as transactions complete.
///
/// - A **page** starts with a browser's navigation to a document (or a redirect on the way
///   there, whose Location joins the same page, as browsers count it): a GET answered 2xx or 304
///   whose request says it comes from a browser navigating (`Sec-Fetch-Dest: document`, an
///   `Accept` that asks for `text/html`, or a browser's `Mozilla/` User-Agent: old Internet
///   Explorers ask for `*/*`) and whose response is HTML (a 304 carries no type: the request
///   suffices). curl, wget, wrk and apps start no page.
/// - An entry joins the page its **Referer** names (the document, or any entry of that page: a
///   stylesheet's images name the stylesheet). A document with such a Referer is a frame of that
///   page when it starts within `pageWindow` of it, unless the browser says it is a top-level
///   navigation (`Sec-Fetch-Mode: navigate`); otherwise it starts a page of its own.
/// - Without such a tie, an entry joins the latest page of the **same client** if it started
///   within `pageWindow` of that page's document; everything else goes to one page per client,
///   whose comment says so (its title is its earliest URL: readers such as har2tree take a
///   page's title for its root URL).
/// Pages are written in the order they started, as browsers write them. The HAR writer names
/// each entry's page with it; the report measures each page's span with the same grouping.
struct PageGrouper {
    struct Page {
        var id: String
        var title: String
        var started: Timestamp
        /// The device the page belongs to (its client address).
        var client: IPAddress
        /// Set on a client's page of requests outside any document page, which says so.
        var comment: String? = nil
    }
    private(set) var pages: [Page] = []
    /// URL → page id, for Referer ties: the documents, and the entries of each page. Bounded.
    private var byURL = BoundedLRU<TextKey, Int>(capacity: 1 << 16)
    /// Where the redirects of pages lead (resolved Location → page id): the next hop joins.
    private var redirectTargets = BoundedLRU<TextKey, Int>(capacity: 1 << 12)
    /// The latest document page of each client address, and its start.
    private var latestPage: [IPAddress: (index: Int, started: Timestamp)] = [:]
    /// The catch-all page of each client address.
    private var otherRequests: [IPAddress: Int] = [:]
    /// How long after a document started an untied request of the same client joins its page.
    static let pageWindow: Int64 = 10_000_000_000

    /// The id of the page `t` belongs to (`pageref`).
    mutating func assign(_ t: Transaction) -> String { pages[page(of: t)].id }

    /// The index in `pages` of the page `t` belongs to, starting one when `t` does.
    mutating func page(of t: Transaction) -> Int {
        guard let request = t.request else { return attachToClient(t) }
        let url = t.url
        let headers = request.headers
        let navigation = Self.navigation(t)
        let page: Int
        if navigation != nil, let index = redirectTargets.value(for: TextKey(url)) {
            // The document (or next hop) a redirect of a page led to: the same page.
            page = index
        } else if let index = headers.first(.referer).flatMap({ byURL.value(for: TextKey($0)) }) {
            // A document that names a page as its Referer and starts soon after it is a frame
            // of that page, unless the browser says it is a top-level navigation.
            let topLevel = headers.first("sec-fetch-mode")?.lowercased() == "navigate"
            if navigation != nil && (topLevel || t.startTime.nanoseconds - pages[index].started.nanoseconds > Self.pageWindow) {
                page = startPage(t, url: url)
            } else {
                page = index
            }
        } else if navigation != nil {
            page = startPage(t, url: url)
        } else {
            return attachToClient(t)
        }
        _ = byURL.set(TextKey(url), page)
        if navigation == .redirect, let next = t.redirectTarget { _ = redirectTargets.set(TextKey(next), page) }
        return page
    }

    enum Navigation { case document, redirect }

    /// A browser navigating (see the type's comment): to a document, or through a redirect.
    static func navigation(_ t: Transaction) -> Navigation? {
        guard let request = t.request, request.method == "GET", let response = t.response else { return nil }
        let status = response.status
        let headers = request.headers
        // Header values are read as bytes (`testValue`): as Strings, found by name, this was
        // 1,200 instructions a transaction of every HAR.
        let dest = headers.index(named: "sec-fetch-dest")
        var fromBrowser = false
        if let dest {
            let document = headers.testValue(at: dest, ascii: { equalsIgnoringCase($0, "document") },
                                             asString: { $0.lowercased() == "document" })
            guard document else { return nil }
            fromBrowser = true
        }
        if !fromBrowser, let accept = headers.index(named: "accept") {
            // ASCII text is found in the bytes as in any decoding of them: bytes from 0x80 on
            // never decode to ASCII.
            fromBrowser = headers.withValueBytes(at: accept) { containsIgnoringCase($0, "text/html") }
        }
        if !fromBrowser, let agent = headers.index(of: .userAgent) {
            fromBrowser = headers.testValue(at: agent, ascii: { hasPrefixBytes($0, "Mozilla/") }, asString: { $0.hasPrefix("Mozilla/") })
        }
        guard fromBrowser else { return nil }
        if (300..<400).contains(status) && status != 304 { return t.redirectTarget != nil ? .redirect : nil }
        guard (200..<300).contains(status) || status == 304 else { return nil }
        if status == 304 { return .document }
        guard let type = response.headers.index(of: .contentType) else { return nil }
        return response.headers.testValue(at: type, ascii: { hasPrefixIgnoringCase($0, "text/html") || hasPrefixIgnoringCase($0, "application/xhtml") },
                                          asString: { v in
                                              let type = v.lowercased()
                                              return type.hasPrefix("text/html") || type.hasPrefix("application/xhtml")
                                          }) ? .document : nil
    }

    private mutating func startPage(_ t: Transaction, url: String) -> Int {
        let index = pages.count
        pages.append(Page(id: "page_\(index + 1)", title: url, started: t.startTime, client: t.connection.client.address))
        latestPage[t.connection.client.address] = (index, t.startTime)
        return index
    }

    /// The client's latest page when the entry started soon after it, else the client's page of
    /// other requests.
    private mutating func attachToClient(_ t: Transaction) -> Int {
        let client = t.connection.client.address
        if let latest = latestPage[client], t.startTime.nanoseconds >= latest.started.nanoseconds,
           t.startTime.nanoseconds - latest.started.nanoseconds <= Self.pageWindow {
            if t.request != nil { _ = byURL.set(TextKey(t.url), latest.index) }
            return latest.index
        }
        // Titled with its earliest entry's URL: readers take a page's title for its root URL.
        if let index = otherRequests[client] {
            if t.startTime < pages[index].started {
                pages[index].started = t.startTime
                pages[index].title = t.request != nil ? t.url : pages[index].title
            }
            return index
        }
        let index = pages.count
        pages.append(Page(id: "page_\(index + 1)", title: t.request != nil ? t.url : "", started: t.startTime, client: client,
                          comment: "requests of \(client.description) outside any page (no browser document ties them to one)"))
        otherRequests[client] = index
        return index
    }
}
