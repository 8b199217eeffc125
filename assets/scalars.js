// The Scalars page's browser side (workbench/pages/scalars.py).
//
// Zoom asks: each relayout of a Scalars plot that asks something of the x axes (a range: a
// drag or the address; an autorange: a double click) is written to the page's zoom-ask store
// (scalars_zoom.ZOOM_ASK_STORE), the server's zoom fetch's input, as the event happens
// (assets/live.js re-sends each plot's relayout events). Not through dcc.Graph's
// relayoutData: it holds only the last event, and a resize ({autosize: true}, which a loaded
// machine may send just after a zoom) replaced it before a callback read it; and Dash drops
// the answer of a callback asked again while in flight, so the zoom's points never arrived.
(function () {
    "use strict";
    const X_ASK = /^xaxis\d{0,3}\.(?:range(?:\[[01]\])?|autorange)$/;
    const RELAYOUT_EVENT = "workbench-relayout";    // assets/live.js
    const CURVES = "#scalars-curves-div";
    const ASK_STORE = "scalars-zoom-ask-store";
    let asked = 0;

    function asksX(relayout) {
        return Boolean(relayout) && typeof relayout === "object" &&
            Object.keys(relayout).some((key) => X_ASK.test(key));
    }

    document.addEventListener(RELAYOUT_EVENT, (event) => {
        const onCurves = event.target.closest && event.target.closest(CURVES);
        const clientside = window.dash_clientside;
        if (onCurves && asksX(event.detail) && clientside && clientside.set_props) {
            asked += 1;     // so that asking the same range again is a change too
            clientside.set_props(ASK_STORE, {data: {relayout: event.detail, n: asked}});
        }
    });
}());

// A page load on /scalars starts fetching and compiling plotly.js at once, while Dash asks for
// the layout and the page's curves, instead of when the first graph mounts (dcc.Graph uses
// window.Plotly when it is there); and the chunks of dcc that the page's graph, dropdowns and
// slider load when they first render, at the address dcc's loader asks for (it takes a script
// already there for that address instead of adding its own). Other pages and in-app
// navigation are left as they are.
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
