// Live follow's browser side (workbench/pages/common.py keep_zooms): the zoom each plot's
// relayouts set, merged into the page's zoom store, so that a live refresh states it on the
// new figure (plotly's uirevision keeps only what a drag changed).
//
// Each plot's relayout events are merged as plotly sends them (plot.__liveZoom), by a
// listener added as the plot's frame is built, and re-sent as a bubbling DOM event
// (RELAYOUT_EVENT, detail: plotly's event) for the pages' own scripts (assets/scalars.js).
// Not from dcc.Graph's relayoutData alone: it holds only the last event, and a callback
// reads it when the callback runs, so a resize ({autosize: true}) just after a zoom replaced
// the zoom before it was read. The zooms callback (fired by relayoutData) reads the merge.
(function () {
    "use strict";
    const AXIS = /^([xy]axis\d{0,2})\.(?:range(?:\[([01])\])?|(autorange))$/;

    // The store's key of a graph: its id, or a pattern id's keys and values, sorted.
    function keyOf(id) {
        if (typeof id === "string") { return id; }
        return Object.keys(id).sort().map((k) => k + "=" + id[k]).join("&");
    }

    // Dash's element id of a pattern id: its keys sorted, values as JSON.
    function elementOf(id) {
        if (typeof id === "string") { return document.getElementById(id); }
        const text = "{" + Object.keys(id).sort().map(
            (k) => JSON.stringify(k) + ":" + JSON.stringify(id[k])).join(",") + "}";
        return document.getElementById(text);
    }

    // One relayout event merged into a plot's zoom ({axis: [low, high]}): a range sets it,
    // an autorange (double click, reset) drops it, anything else leaves it.
    function merged(zoom, relayout) {
        const next = Object.assign({}, zoom);
        for (const [key, value] of Object.entries(relayout || {})) {
            const found = AXIS.exec(key);
            const nested = /^[xy]axis\d{0,2}$/.test(key) && value && Array.isArray(value.range);
            if (nested) {
                next[key] = value.range.slice(0, 2);
            } else if (found && found[3]) {
                if (value) { delete next[found[1]]; }
            } else if (found && found[2] === undefined) {
                if (Array.isArray(value) && value.length === 2) { next[found[1]] = value.slice(); }
            } else if (found) {
                const ends = (next[found[1]] || [null, null]).slice();
                ends[Number(found[2])] = value;
                next[found[1]] = ends;
            }
        }
        return next;
    }

    // The axis ranges a plot's figure states outright ({axis: [low, high]}; autorange off).
    function stated(plot) {
        const zoom = {};
        for (const [key, value] of Object.entries((plot && plot.layout) || {})) {
            if (/^[xy]axis\d{0,2}$/.test(key) && value && value.autorange === false &&
                    Array.isArray(value.range) && value.range.length === 2) {
                zoom[key] = value.range.slice();
            }
        }
        return zoom;
    }

    const RELAYOUT_EVENT = "workbench-relayout";

    // One relayout event of a plot, as it happens: merged into its zoom, which starts from
    // the zoom its figure states (the server's, from the address: common.keep_zooms).
    function relayouted(plot, relayout) {
        plot.__liveZoom = merged(plot.__liveZoom || stated(plot), relayout);
        plot.dispatchEvent(new CustomEvent(RELAYOUT_EVENT, {bubbles: true, detail: relayout}));
    }

    function listen() {
        document.querySelectorAll(".js-plotly-plot").forEach((plot) => {
            if (!plot.__relayouts && typeof plot.on === "function") {
                plot.__relayouts = true;
                plot.on("plotly_relayout", (relayout) => relayouted(plot, relayout));
            }
        });
    }

    function watch() {
        new MutationObserver(listen).observe(document.body, {childList: true, subtree: true});
        listen();
    }

    // The zoom of each plot of `ids` as its events merged it (as its figure states it before
    // any; where a plot is not found, its stored zoom merged with its last relayout).
    function zooms(relayouts, ids, kept) {
        const many = Array.isArray(ids);
        const idList = many ? ids : [ids];
        const events = many ? relayouts : [relayouts];
        const next = {};
        idList.forEach((id, i) => {
            const key = keyOf(id);
            const element = elementOf(id);
            const plot = element && (element.querySelector(".js-plotly-plot") || element);
            const before = (kept && kept[key]) || {};
            const zoom = plot ? (plot.__liveZoom || stated(plot))
                : (events[i] ? merged(before, events[i]) : before);
            if (Object.keys(zoom).length) { next[key] = zoom; }
        });
        return next;
    }

    if (document.body) {
        watch();
    } else {
        document.addEventListener("DOMContentLoaded", watch);
    }

    window.dash_clientside = Object.assign({}, window.dash_clientside, {
        live: {zooms: zooms},
    });
}());
