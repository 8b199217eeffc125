// dash-cytoscape loaded when a canvas first needs it (workbench/cytoscape_js.py keeps its
// bundle out of the page): the Runs, Scalars and other pages without a graph canvas no
// longer fetch and compile its 0.5 MB before they draw. Dash's renderer finds components as
// window[namespace][type], so window.dash_cytoscape is a stand-in whose Cytoscape renders
// an empty box of the canvas's size until the bundle has run, then the real component with
// the same props. The stand-in stays window.dash_cytoscape (the bundle's own assignment is
// taken aside), so the renderer never swaps one component type for the other, which would
// mount the canvas twice. A page load on a canvas page starts fetching it at once.
(function () {
    "use strict";
    const BUNDLE = "_dash-component-suites/dash_cytoscape/dash_cytoscape.min.js";
    const CANVAS_PAGES = ["/graph", "/compare", "/replay", "/quantization"];
    const React = window.React;
    let real = null;
    let loading = null;

    function bundleUrl() {
        const element = document.getElementById("_dash-config");
        const prefix = element ? JSON.parse(element.textContent).requests_pathname_prefix : "/";
        return `${prefix || "/"}${BUNDLE}`;
    }

    function load() {
        if (!loading) {
            loading = new Promise((resolve, reject) => {
                const script = document.createElement("script");
                script.src = bundleUrl();
                script.async = true;
                script.onload = () => (real ? resolve(real) : reject(new Error(
                    "dash-cytoscape's bundle did not define its components")));
                script.onerror = () => {
                    loading = null;         // a later canvas tries again
                    reject(new Error(`cannot load ${script.src}`));
                };
                document.head.appendChild(script);
            });
        }
        return loading;
    }

    function Cytoscape(props) {
        const [components, setComponents] = React.useState(real);
        const [failed, setFailed] = React.useState(null);
        React.useEffect(() => {
            let mounted = true;
            if (!components) {
                load().then((found) => mounted && setComponents(found),
                            (error) => mounted && setFailed(error.message));
            }
            return () => {
                mounted = false;
            };
        }, []);
        if (components) {
            return React.createElement(components.Cytoscape, props);
        }
        return React.createElement("div", {
            id: props.id, className: props.className, style: props.style,
            title: failed || undefined,
        });
    }

    const standIn = {Cytoscape};
    Object.defineProperty(window, "dash_cytoscape", {
        configurable: true,
        get: () => standIn,
        set: (components) => {
            real = components;
        },
    });
    if (CANVAS_PAGES.some((path) => window.location.pathname.endsWith(path))) {
        load().catch(() => undefined);      // the canvas tells (its box's title)
    }
})();
