/// Groups entries into HAR pages where that can be done honestly: an HTML document (a GET answered
/// with text/html) starts a page, and a later request whose Referer names that document's URL
/// joins it. Other entries have no page.
enum PageGrouper {
    struct Page { var id: String; var title: String; var started: Timestamp }
    struct Result { var pages: [Page]; var pageOf: [String?] }

    static func group(_ transactions: [Transaction]) -> Result {
        var pages: [Page] = []
        var pageOf = [String?](repeating: nil, count: transactions.count)
        var byURL: [String: String] = [:]
        for (i, t) in transactions.enumerated() {
            guard let request = t.request else { continue }
            if let referer = request.headers.first("Referer"), let page = byURL[referer] {
                pageOf[i] = page
            }
            if request.method == "GET", let response = t.response, response.status == 200,
               (response.headers.first("Content-Type") ?? "").lowercased().hasPrefix("text/html") {
                let url = t.url
                if byURL[url] == nil || pageOf[i] == nil {
                    let id = "page_\(pages.count + 1)"
                    pages.append(Page(id: id, title: url, started: t.startTime))
                    byURL[url] = id
                    pageOf[i] = id
                }
            }
        }
        return Result(pages: pages, pageOf: pageOf)
    }
}
