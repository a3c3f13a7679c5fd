import Foundation
import HubCore
import Hummingbird

/// `/console/config`: the `hub config check` report of the hub's configuration
/// (``HubServerConfiguration/configReport``), made when the page is opened: a status per check
/// and its message. The report names secrets only by where they come from.
extension Console {
    func addConfigPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "config") { _, _, _ in
            guard let makeReport = api.configuration.configReport else {
                return ConsoleView(
                    title: "Configuration", section: "config",
                    content: """
                        <p>This hub was started without a configuration report (it is embedded, not run by \
                        <code>hub serve</code>).</p>
                        """)
            }
            let report = await makeReport()
            let rows = report.checks.map { check in
                """
                <tr><td>\(ConsoleLayout.status(check.status.rawValue, check.status.rawValue))</td>\
                <th scope="row" class="mono">\(check.subject)</th><td>\(check.message)</td></tr>
                """ as HTML
            }
            let counts = [ConsoleConfigReport.Status.error, .warning, .ok].map { status in
                "\(report.checks.filter { $0.status == status }.count) \(status.rawValue)"
            }
            let content: HTML = """
                <p>\(ConsoleLayout.status(report.overall.rawValue, report.overall.rawValue)) \
                <span class="mono">\(report.source)</span> as <code>hub config check</code> reads it now: \
                \(counts.joined(separator: ", ")).</p>
                \(ConsoleLayout.table(caption: "Checks", headers: ["Status", "Subject", "Finding"], rows: rows))
                """
            return ConsoleView(title: "Configuration", section: "config", content: content)
        }
    }
}
