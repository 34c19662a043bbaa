import Testing
@testable import IcySniffCore

/// HAR pages (issue 19): every HAR with entries has a page; browser documents start pages,
/// what their Referer and timing tie to them joins them; curl-like traffic gets one page per
/// client, not one per request.
@Suite struct PageGrouperTests {
    static func exchange(_ target: String, headers: [String], status: Int = 200, type: String? = "text/html") -> String {
        """
        >>>
        GET \(target) HTTP/1.1
        Host: example.com
        \(headers.joined(separator: "\n"))

        <<<
        HTTP/1.1 \(status) X
        \(type.map { "Content-Type: \($0)\n" } ?? "")Content-Length: 0

        """ + "\n"
    }

    static func pages(_ exchanges: [String]) -> (ids: [String], grouper: PageGrouper) {
        var grouper = PageGrouper()
        let transactions = Transcript(exchanges.joined()).run()
        return (transactions.map { grouper.assign($0) }, grouper)
    }

    @Test func curlLikeRequestsShareOneClientPage() {
        let (ids, grouper) = Self.pages((1...5).map { _ in Self.exchange("/", headers: ["User-Agent: curl/8.5.0", "Accept: */*"]) })
        #expect(ids == Array(repeating: "page_1", count: 5))
        #expect(grouper.pages.count == 1)
        #expect(grouper.pages[0].title == "http://example.com/")
        #expect(grouper.pages[0].comment == "requests of 10.0.0.2 outside any page (no browser document ties them to one)")
    }

    @Test func aBrowserDocumentAndWhatItsRefererTiesToIt() {
        let browser = ["User-Agent: Mozilla/5.0", "Accept: text/html,application/xhtml+xml"]
        let (ids, grouper) = Self.pages([
            Self.exchange("/", headers: browser),
            Self.exchange("/style.css", headers: ["Accept: text/css", "Referer: http://example.com/"], type: "text/css"),
            Self.exchange("/img.png", headers: ["Accept: image/*", "Referer: http://example.com/style.css"], type: "image/png"),
            // A frame: a document whose Referer is the page, soon after it.
            Self.exchange("/frame.html", headers: browser + ["Referer: http://example.com/"]),
            // A top-level navigation from the page: a page of its own.
            Self.exchange("/next", headers: browser + ["Referer: http://example.com/", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"]),
            // A reload answered 304 is a document too.
            Self.exchange("/", headers: browser + ["Sec-Fetch-Dest: document", "Sec-Fetch-Mode: navigate"], status: 304, type: nil),
            // An untied request soon after: the latest page of the client.
            Self.exchange("/api", headers: ["Accept: application/json"], type: "application/json"),
        ])
        #expect(ids == ["page_1", "page_1", "page_1", "page_1", "page_2", "page_3", "page_3"])
        #expect(grouper.pages.map(\.title) == ["http://example.com/", "http://example.com/next", "http://example.com/"])
    }

    @Test func aRedirectAndTheDocumentItLeadsToAreOnePage() {
        let browser = ["User-Agent: Mozilla/5.0", "Accept: text/html"]
        let redirect = """
        >>>
        GET / HTTP/1.1
        Host: example.com
        User-Agent: Mozilla/5.0
        Accept: text/html

        <<<
        HTTP/1.1 303 See Other
        Location: /home
        Content-Length: 0


        """
        let (ids, grouper) = Self.pages([redirect, Self.exchange("/home", headers: browser),
                                         Self.exchange("/a.js", headers: ["Referer: http://example.com/home"], type: "text/javascript")])
        #expect(ids == ["page_1", "page_1", "page_1"])
        #expect(grouper.pages.map(\.title) == ["http://example.com/"])
    }

    /// A client that asks for HTML (in any case, anywhere in Accept) navigates; one that does
    /// not, with no browser User-Agent, does not.
    @Test func acceptingHTMLMakesANavigation() {
        for (accept, navigates) in [("text/html", true), ("application/xhtml+xml,TEXT/HTML;q=0.9", true), ("*/*", false),
                                    ("text/htm", false), ("application/json, text/plain", false), ("", false)] {
            let t = Transcript(Self.exchange("/", headers: ["User-Agent: app/1.0", "Accept: \(accept)"])).run()
            #expect((PageGrouper.navigation(t[0]) == .document) == navigates, "Accept: \(accept)")
        }
        let bytes = Array("xxTEXT/HTMLyy".utf8)
        bytes.withUnsafeBufferPointer { b in
            #expect(containsIgnoringCase(b, "text/html"))
            #expect(containsIgnoringCase(UnsafeBufferPointer(rebasing: b[2..<11]), "text/html"))
            #expect(!containsIgnoringCase(UnsafeBufferPointer(rebasing: b[2..<10]), "text/html"))
            #expect(!containsIgnoringCase(UnsafeBufferPointer(rebasing: b[0..<0]), "text/html"))
        }
    }

    /// What the browser says (Sec-Fetch-Dest, in any case), its User-Agent (case kept) and the
    /// response's type decide; values with bytes beyond ASCII are read as their text.
    @Test func theRequestAndTheResponseSayWhatIsANavigation() {
        let cases: [([String], String?, PageGrouper.Navigation?)] = [
            (["Sec-Fetch-Dest: DOCUMENT"], "text/html", .document),
            (["Sec-Fetch-Dest: image", "Accept: text/html", "User-Agent: Mozilla/5.0"], "text/html", nil),
            (["Sec-Fetch-Dest: documents"], "text/html", nil),
            (["User-Agent: Mozilla/5.0", "Accept: */*"], "TEXT/HTML; charset=utf-8", .document),
            (["User-Agent: mozilla/5.0", "Accept: */*"], "text/html", nil),
            (["User-Agent: Mozilla/\u{e9}", "Accept: */*"], "text/html", .document),
            (["User-Agent: Mozilla", "Accept: */*"], "text/html", nil),
            (["Accept: text/html"], "Application/XHTML+xml", .document),
            (["Accept: text/html"], "text/html;q=\u{e9}", .document),
            (["Accept: text/html"], "text/plain", nil),
            (["Accept: \u{e9}text/HTML"], "text/html", .document),
            (["Accept: text/html"], nil, nil),
        ]
        for (headers, type, expected) in cases {
            let t = Transcript(Self.exchange("/", headers: headers, type: type)).run()
            #expect(PageGrouper.navigation(t[0]) == expected, "\(headers) \(type ?? "no type")")
        }
    }

    @Test func aResponseWithoutRequestStillHasAPage() {
        var grouper = PageGrouper()
        let transactions = Transcript("""
        <<<
        HTTP/1.1 200 OK
        Content-Length: 0

        """).run(handshake: false)
        #expect(transactions.count == 1)
        #expect(transactions.map { grouper.assign($0) } == ["page_1"])
    }
}
