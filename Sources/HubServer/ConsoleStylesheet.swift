/// The console's one stylesheet, embedded in the binary and served at ``path`` (the
/// Content-Security-Policy allows styles from the hub only: no CDN, no inline style).
///
/// Mobile first: one column that fits 375 px, tables that keep a readable width and scroll
/// sideways inside their own box instead of the page; a visible focus ring on everything that takes focus; colours with at least 4.5:1
/// contrast; status is said in words, colour only repeats it.
enum ConsoleStylesheet {
    static let path = "/console/assets/console.css"

    static let text = """
        *, *::before, *::after { box-sizing: border-box; }
        html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
        body {
          margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
          color: #1b1f24; background: #f6f7f9; overflow-wrap: break-word;
        }
        a { color: #0b57d0; }
        a:hover { text-decoration-thickness: 2px; }
        :focus-visible { outline: 3px solid #b35c00; outline-offset: 2px; }
        .skip-link {
          position: absolute; left: 0.5rem; top: -3rem; padding: 0.5rem 1rem; background: #1b1f24;
          color: #fff; z-index: 10;
        }
        .skip-link:focus { top: 0.5rem; }
        header.top {
          display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 0.5rem;
          padding: 0.75rem 1rem; background: #1b1f24; color: #fff;
        }
        header.top a { color: #fff; }
        header.top .brand { font-weight: 700; text-decoration: none; }
        header.top form { margin: 0; }
        nav.sections { background: #fff; border-bottom: 1px solid #d0d5dd; padding: 0 1rem; }
        nav.sections ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 0 1rem; }
        nav.sections a { display: inline-block; padding: 0.6rem 0; text-decoration: none; }
        nav.sections a[aria-current="page"] { font-weight: 700; border-bottom: 3px solid #0b57d0; }
        nav.sections .app-name { font-weight: 700; padding: 0.6rem 0; }
        main { padding: 1rem 1.5rem; }
        h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
        h2 { font-size: 1.2rem; margin: 1.5rem 0 0.5rem; }
        section, .card { background: #fff; border: 1px solid #d0d5dd; border-radius: 6px; padding: 1rem; margin: 0 0 1rem; }
        section > h2:first-child { margin-top: 0; }
        .table-wrap { overflow-x: auto; max-width: 100%; }
        table { border-collapse: collapse; width: 100%; min-width: 36rem; }
        .id {
          display: inline-block; max-width: 22rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
          vertical-align: bottom; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em;
        }
        dd .id { max-width: 100%; }
        td.mono, th.mono, dd.mono { overflow-wrap: normal; word-break: normal; }
        pre.raw { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; max-height: 20rem; overflow: auto; }
        p.pager { margin: 0.75rem 0 0; }
        time { white-space: nowrap; }
        caption { text-align: left; font-weight: 600; padding: 0 0 0.5rem; }
        th, td { text-align: left; vertical-align: top; padding: 0.4rem 0.6rem; border-bottom: 1px solid #e4e7ec; }
        thead th { background: #eef1f5; }
        code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
        .status { display: inline-block; padding: 0 0.5rem; border-radius: 1rem; font-weight: 600; white-space: nowrap; }
        .status-ok { background: #dcf5e3; color: #0f5323; }
        .status-warning { background: #fff1d6; color: #6b4200; }
        .status-error { background: #fde2e1; color: #8a1c15; }
        .status-off { background: #e9ecf0; color: #343a40; }
        form.stacked { display: grid; gap: 1rem; max-width: 36rem; }
        label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
        input[type="text"], input[type="password"], textarea, select {
          width: 100%; font: inherit; padding: 0.5rem; border: 1px solid #6b7380; border-radius: 4px; background: #fff;
        }
        textarea { min-height: 5rem; }
        .hint { color: #4a515b; font-size: 0.9rem; margin: 0.25rem 0 0; }
        .field-error { color: #8a1c15; font-weight: 600; margin: 0.25rem 0 0; }
        [aria-invalid="true"] { border-color: #8a1c15; border-width: 2px; }
        button {
          font: inherit; font-weight: 600; padding: 0.5rem 1.25rem; border-radius: 4px; border: 1px solid #0b57d0;
          background: #0b57d0; color: #fff; cursor: pointer; justify-self: start;
        }
        button.link { background: transparent; border-color: #fff; color: #fff; padding: 0.25rem 0.75rem; }
        .notice { border-left: 4px solid #0b57d0; background: #eaf1fd; padding: 0.75rem 1rem; margin: 0 0 1rem; }
        .notice.error { border-color: #8a1c15; background: #fde2e1; }
        .notice.ok { border-color: #0f5323; background: #dcf5e3; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0; }
        dl.facts dt { font-weight: 600; }
        dl.facts dd { margin: 0; }
        ul.plain { margin: 0; padding-left: 1.25rem; }
        nav.tabs ul { list-style: none; margin: 0 0 1rem; padding: 0; display: flex; flex-wrap: wrap; gap: 0.5rem; }
        nav.tabs a { display: inline-block; padding: 0.3rem 0.9rem; border: 1px solid #0b57d0; border-radius: 1rem; text-decoration: none; }
        nav.tabs a[aria-current="page"] { background: #0b57d0; color: #fff; font-weight: 700; }
        .login { max-width: 24rem; margin: 3rem auto; }
        form.inline-form { display: flex; flex-wrap: wrap; gap: 0 1rem; align-items: end; margin: 0 0 1rem; }
        form.inline-form p { margin: 0 0 0.5rem; flex: 1 1 14rem; }
        form.inline-form input { width: 100%; font: inherit; padding: 0.5rem; border: 1px solid #6b7380; border-radius: 4px; }
        ol.timeline { margin: 0; padding-left: 1.5rem; }
        ol.timeline li { margin: 0 0 0.35rem; }
        .charts { display: grid; gap: 1rem; }
        figure.chart { margin: 0; }
        figure.chart > svg { width: 100%; height: auto; display: block; background: #fff; }
        figure.chart figcaption { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0.25rem 1rem; margin: 0 0 0.25rem; }
        .charts { grid-template-columns: repeat(auto-fit, minmax(min(100%, 34rem), 1fr)); }
        table.values { min-width: 0; font-size: 0.9rem; }
        details.values summary { cursor: pointer; }
        .chart-title { font-weight: 600; }
        ul.legend { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 0 1rem; }
        ul.legend li { white-space: nowrap; }
        ul.legend svg { vertical-align: middle; }
        @media (max-width: 40rem) {
          dl.facts { grid-template-columns: 1fr; }
          dl.facts dd { margin-bottom: 0.5rem; }
          main { padding: 0.75rem; }
          .id { max-width: 12rem; }
        }
        """
}
