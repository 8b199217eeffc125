// Every cytoscape canvas of the workbench (Graph, Compare, Replay), as dash-cytoscape makes
// it: its write-back of the whole element list is switched off. After each add or remove
// dash-cytoscape sends every element, read back from cytoscape, to Dash as the `elements`
// prop 100 ms later (so that Python can read dragged positions); Dash then renders the
// component again and it diffs every element once more. No callback reads those elements
// (the server placed every node), so that round only cost each redraw a second pass over
// the drawing, often before its first frame was painted. And a hovered node shows its
// whole name when its label was cut short.
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

    Object.defineProperty(window, "cy", {
        configurable: true,
        get: () => current,
        set: (cy) => {
            current = cy;
            queueMicrotask(() => {
                quiet(cy);
                hover(cy);
            });
        },
    });
})();
