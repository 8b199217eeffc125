// The Scalars page's browser side (workbench/pages/scalars.py): a page load on /scalars
// starts fetching and compiling plotly.js at once, while Dash asks for the layout and the
// page's curves, instead of when the first graph mounts (dcc.Graph uses window.Plotly when
// it is there); and the chunks of dcc that the page's graph, dropdowns and slider load when
// they first render, at the address dcc's loader asks for (it takes a script already there
// for that address instead of adding its own). Other pages and in-app navigation are left
// as they are.
(function () {
    "use strict";
    const PAGES = ["/scalars"];
    const CHUNKS = ["async-graph.js", "async-dropdown.js", "async-slider.js"];

    function plotlyUrl() {
        const element = document.getElementById("_dash-config");
        if (!element) {
            return null;
        }
        const config = JSON.parse(element.textContent);
        return config.serve_locally
            ? `${config.requests_pathname_prefix}_dash-component-suites/plotly/package_data/plotly.min.js`
            : config.plotlyjs_url;
    }

    function onPage() {
        return PAGES.some((path) => window.location.pathname.endsWith(path));
    }

    if (window.Plotly || !onPage()) {
        return;
    }
    function fetchScript(src) {
        const script = document.createElement("script");
        script.src = src;
        script.async = true;
        document.head.appendChild(script);
    }

    const url = plotlyUrl();
    if (url) {
        fetchScript(url);
    }
    const element = document.getElementById("_dash-config");
    if (element && JSON.parse(element.textContent).serve_locally) {
        const prefix = JSON.parse(element.textContent).requests_pathname_prefix;
        CHUNKS.forEach((chunk) => fetchScript(`${prefix}_dash-component-suites/dash/dcc/${chunk}`));
    }
})();
