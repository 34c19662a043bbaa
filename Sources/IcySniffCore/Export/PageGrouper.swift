/// Groups entries into HAR pages where that can be done honestly: an HTML document (a GET answered
/// 200 with text/html) starts a page, and a later request whose Referer names that document's URL
/// joins it. Other entries have no page. Works as transactions complete.
struct PageGrouper {
    struct Page { var id: String; var title: String; var started: Timestamp }
    private(set) var pages: [Page] = []
    private var byURL: [String: String] = [:]

    mutating func assign(_ t: Transaction) -> String? {
        guard let request = t.request else { return nil }
        var page: String? = nil
        if let referer = request.headers.first(.referer) { page = byURL[referer] }
        if page == nil, request.method == "GET", let response = t.response, response.status == 200,
           (response.headers.first(.contentType) ?? "").lowercased().hasPrefix("text/html") {
            let id = "page_\(pages.count + 1)"
            let url = t.url
            pages.append(Page(id: id, title: url, started: t.startTime))
            byURL[url] = id
            page = id
        }
        return page
    }
}
