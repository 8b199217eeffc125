// Names the address a page load's first layout is for (workbench/first_page.py): Dash's
// renderer asks for `_dash-layout` with fetch, and this header on that request lets the
// server put the page itself in the layout, so no router callback is waited for before the
// page draws. Only a plain-text address is sent (a header takes nothing else); without it
// the server answers the bare shell and Dash's router draws the page as before.
(function () {
    "use strict";
    const HEADER = "X-Workbench-Location";
    const LAYOUT = "_dash-layout";
    const original = window.fetch;
    if (typeof original !== "function") {
        return;
    }
    window.fetch = function (resource, options) {
        const address = window.location.href;
        if (typeof resource === "string" && resource.endsWith(LAYOUT)
                && /^[\x21-\x7e]+$/.test(address)) {
            const headers = new Headers((options && options.headers) || {});
            headers.set(HEADER, address);
            return original.call(window, resource, {...options, headers});
        }
        return original.call(window, resource, options);
    };
})();
