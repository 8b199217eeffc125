// The Scalars page's browser side (workbench/pages/scalars.py): a page load on /scalars
// starts fetching and compiling plotly.js at once, while Dash asks for the layout and the
// page's curves, instead of when the first graph mounts (dcc.Graph uses window.Plotly when
// it is there). Other pages and in-app navigation are left as they are.
(function () {
    "use strict";
    const PAGES = ["/scalars"];

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
    const url = plotlyUrl();
    if (url) {
        const script = document.createElement("script");
        script.src = url;
        script.async = true;
        document.head.appendChild(script);
    }
})();
