// Every cytoscape canvas of the workbench (Graph, Compare, Replay), as dash-cytoscape makes
// it: its write-back of the whole element list is switched off. After each add or remove
// dash-cytoscape sends every element, read back from cytoscape, to Dash as the `elements`
// prop 100 ms later (so that Python can read dragged positions); Dash then renders the
// component again and it diffs every element once more. No callback reads those elements
// (the server placed every node), so that round only cost each redraw a second pass over
// the drawing, often before its first frame was painted. A hovered node shows its whole
// name when its label was cut short. And the Graph page's pan and zoom go to its address
// (`zoom=0.8&pan=120,-40`, workbench/pages/graph_viewport.py) once the user stops moving.
(function () {
    "use strict";
    let current;

    // dash-cytoscape sets window.cy before it adds its listeners (in the same call), so
    // they are removed once that call is over. Its other "add"/"remove" listeners keep a
    // selection (the canvases are autounselectify) and rerun the layout when
    // autoRefreshLayout is on (it is off); cytoscape itself registers none.
    function quiet(cy) {
        if (cy && typeof cy.off === "function") {
            cy.off("add remove dragfree");
        }
    }

    // A label the server cut short (viz.graph_labels.clipped_label) carries the whole in
    // data "full": hovering the node shows it as the canvas's tooltip.
    function hover(cy) {
        if (!cy || typeof cy.on !== "function") {
            return;
        }
        const box = cy.container();
        cy.on("mouseover", "node", (event) => {
            box.title = event.target.data("full") || "";
        });
        cy.on("mouseout", "node", () => {
            box.title = "";
        });
    }

    const GRAPH_CANVAS = "graph-cytoscape";
    const GRAPH_PATH = "/graph";
    const SETTLE_MS = 300;      // a wheel or a drag fires many events: write the last

    // The address's other parameters as they were written, without its zoom and pan.
    function otherParts() {
        return window.location.search.slice(1).split("&").filter(
            (part) => part && !/^(zoom|pan)=/.test(part));
    }

    function setAddress(parts) {
        const address = window.location.pathname + (parts.length ? "?" + parts.join("&") : "");
        if (address !== window.location.pathname + window.location.search) {
            window.history.replaceState(window.history.state, "", address);
        }
    }

    function writeViewport(cy) {
        const zoom = cy.zoom();
        const pan = cy.pan();
        if (![zoom, pan.x, pan.y].every(Number.isFinite)) {
            return;
        }
        setAddress([...otherParts(), "zoom=" + Number(zoom.toFixed(3)),
                    "pan=" + Math.round(pan.x) + "," + Math.round(pan.y)]);
    }

    // The user's pans and zooms (cytoscape's own events for a drag, a wheel, a pinch) go to
    // the address; a new drawing fitted to the window (a layout with `fit`) takes them out
    // again, since its view is the default one.
    function followViewport(cy) {
        const box = cy && typeof cy.container === "function" ? cy.container() : null;
        if (!box || box.id !== GRAPH_CANVAS) {
            return;
        }
        let timer = null;
        const shown = () => window.location.pathname.endsWith(GRAPH_PATH) && !cy.destroyed();
        cy.on("layoutstop", (event) => {
            const options = event.layout && event.layout.options;
            if (options && options.fit && shown()) {
                window.clearTimeout(timer);
                setAddress(otherParts());
            }
        });
        cy.on("dragpan scrollzoom pinchzoom", () => {
            window.clearTimeout(timer);
            timer = window.setTimeout(() => shown() && writeViewport(cy), SETTLE_MS);
        });
    }

    Object.defineProperty(window, "cy", {
        configurable: true,
        get: () => current,
        set: (cy) => {
            current = cy;
            queueMicrotask(() => {
                quiet(cy);
                hover(cy);
                followViewport(cy);
            });
        },
    });
})();
