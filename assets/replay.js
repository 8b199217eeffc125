// The Replay page's browser side (workbench/pages/replay.py): where the play interval,
// the buttons and the sliders move the position {step, t, carry}; what a position shows on
// the sliders and in the address (history.replaceState: no navigation, so the page is not
// rebuilt); the open scopes and the speed in the address (`open`, `speed`, which show keeps
// as they are); and the keys, which press the page's buttons.
(function () {
    "use strict";
    const noUpdate = () => window.dash_clientside.no_update;

    function traced(bounds, step) {
        return bounds.traced && Object.prototype.hasOwnProperty.call(bounds.traced, String(step));
    }

    function span(bounds, step) {
        return traced(bounds, step) ? bounds.traced[String(step)] : null;
    }

    // The recorded step `offset` places from `step` (bounds.numbers when not consecutive).
    function moved(bounds, step, offset) {
        if (!bounds.numbers) {
            return Math.min(bounds.last, Math.max(bounds.first, step + offset));
        }
        const numbers = bounds.numbers;
        let index = numbers.findIndex((n) => n >= step);
        if (index < 0) { index = numbers.length - 1; }
        if (numbers[index] > step && offset > 0) { offset -= 1; }
        index = Math.min(numbers.length - 1, Math.max(0, index + offset));
        return numbers[index];
    }

    // The first traced step after `step` and up to `until`, or null.
    function tracedBetween(bounds, step, until) {
        let best = null;
        for (const key of Object.keys(bounds.traced || {})) {
            const n = Number(key);
            if (n > step && n <= until && (best === null || n < best)) { best = n; }
        }
        return best;
    }

    // One tick of play: through a traced step's time first, then on by `speed` steps,
    // stopping at each traced step on the way; past the last step it starts again.
    function tick(bounds, position, speed) {
        const step = position.step;
        const length = span(bounds, step);
        if (length !== null && position.t !== null && position.t !== undefined) {
            const t = position.t + length * speed / bounds.ticks;
            return {step: step, t: t >= length ? null : t, carry: 0};
        }
        if (step >= bounds.last) {
            return {step: bounds.first, t: traced(bounds, bounds.first) ? 0 : null, carry: 0};
        }
        const carry = (position.carry || 0) + speed;
        const whole = Math.floor(carry);
        if (whole < 1) { return {step: step, t: position.t, carry: carry}; }
        let next = moved(bounds, step, whole);
        const stop = tracedBetween(bounds, step, next);
        if (stop !== null) { next = stop; }
        return {step: next, t: traced(bounds, next) ? 0 : null, carry: carry - whole};
    }

    function navigate(_tick, _first, _prev, _next, _last, _nearest, stepValue, timeValue,
                      bounds, position, speed, nearest) {
        if (!bounds || !position || position.step === null || position.step === undefined) {
            return noUpdate();
        }
        const fired = window.dash_clientside.callback_context.triggered.map((t) => t.prop_id);
        const which = fired.length ? fired[0].split(".")[0] : "";
        const step = position.step;
        switch (which) {
        case "replay-play-interval":
            return tick(bounds, position, Number(speed) || 1);
        case "replay-first-button":
            return {step: bounds.first, t: null, carry: 0};
        case "replay-last-button":
            return {step: bounds.last, t: null, carry: 0};
        case "replay-prev-button":
            return {step: moved(bounds, step, -1), t: null, carry: 0};
        case "replay-next-button":
            return {step: moved(bounds, step, 1), t: null, carry: 0};
        case "replay-nearest-button":
            return nearest === null || nearest === undefined ? noUpdate()
                : {step: nearest, t: null, carry: 0};
        case "replay-step-slider":
            if (stepValue === null || stepValue === step) { return noUpdate(); }
            return {step: moved(bounds, stepValue, 0), t: null, carry: 0};
        case "replay-time-slider": {
            // The slider moves in whole microseconds: what it shows of the position is
            // no move, and its last one is the end of the step.
            const length = span(bounds, step);
            if (length === null || timeValue === null) { return noUpdate(); }
            const now = position.t === null || position.t === undefined ? length : position.t;
            if (Math.abs(timeValue - now) < 0.5) { return noUpdate(); }
            return {step: step, t: timeValue >= length - 0.5 ? null : timeValue, carry: 0};
        }
        default:
            return noUpdate();
        }
    }

    function show(position, bounds, shownStep) {
        if (!bounds || !position || position.step === null || position.step === undefined) {
            return [noUpdate(), noUpdate(), noUpdate(), noUpdate(), noUpdate(), noUpdate()];
        }
        const length = span(bounds, position.step);
        const t = position.t === null || position.t === undefined ? length : position.t;
        const params = new URLSearchParams(window.location.search);
        params.set("run", bounds.run);
        params.set("step", String(position.step));
        if (length !== null && position.t !== null && position.t !== undefined) {
            params.set("t", String(Math.round(position.t)));
        } else {
            params.delete("t");
        }
        const address = window.location.pathname + "?" + params.toString();
        if (window.location.pathname.endsWith("/replay")) {
            window.history.replaceState(window.history.state, "", address);
        }
        // The curve and the logs follow (run, step) pairs: a new run may start at the
        // same step number as the last one.
        const same = Array.isArray(shownStep) && shownStep[0] === bounds.run &&
            shownStep[1] === position.step;
        return [position.step, length === null ? 1 : Math.round(t),
                length === null ? 1 : length, length === null,
                same ? noUpdate() : [bounds.run, position.step], address];
    }

    // The user opened or closed a scope: the address says which are open, so a reload or a
    // shared link draws the same expansion (play and scrub keep the parameter). Written as
    // common.address writes a list: comma-joined, or once per item when an item has a
    // comma (a series "block_[0-2,5]"), a lone one followed by an empty one.
    // null (another run than the address's was chosen) drops the parameter.
    function opened(value) {
        if (!Array.isArray(value) && value !== null) { return noUpdate(); }
        const params = new URLSearchParams(window.location.search);
        params.delete("open");
        if (value !== null && value.some((item) => String(item).includes(","))) {
            value.forEach((item) => params.append("open", item));
            if (value.length === 1) { params.append("open", ""); }
        } else if (value !== null) {
            params.set("open", value.join(","));
        }
        const address = window.location.pathname + "?" + params.toString();
        if (window.location.pathname.endsWith("/replay")) {
            window.history.replaceState(window.history.state, "", address);
        }
        return address;
    }

    // The speed chosen, in the address (`speed`, left out at 1x); also when the page loads,
    // so that a speed the address asked for and the page refused (replay.speed_choice) is
    // replaced by the one it plays at.
    function speed(value) {
        if (typeof value !== "number" || !window.location.pathname.endsWith("/replay")) {
            return noUpdate();
        }
        const params = new URLSearchParams(window.location.search);
        if (value === 1) { params.delete("speed"); } else { params.set("speed", String(value)); }
        const query = params.toString();
        const address = window.location.pathname + (query ? "?" + query : "");
        window.history.replaceState(window.history.state, "", address);
        return address;
    }

    function play(_clicks, position, bounds, playing) {
        const fired = window.dash_clientside.callback_context.triggered.map((t) => t.prop_id);
        let now = Boolean(playing);
        if (fired.some((id) => id.startsWith("replay-play-button"))) {
            now = !now && Boolean(bounds);
        } else if (now && bounds && position && position.step >= bounds.last &&
                   (position.t === null || position.t === undefined)) {
            now = false;          // played to the end
        } else {
            return [noUpdate(), noUpdate(), noUpdate()];
        }
        return [now, !now, now ? "Pause" : "Play"];
    }

    window.dash_clientside = Object.assign({}, window.dash_clientside, {
        replay: {navigate: navigate, show: show, play: play, opened: opened, speed: speed},
    });

    const KEYS = {
        " ": "replay-play-button", ArrowLeft: "replay-prev-button",
        ArrowRight: "replay-next-button", Home: "replay-first-button",
        End: "replay-last-button",
    };

    // Keys press the page's buttons, except while typing or on a focused slider (which
    // moves itself with the arrows).
    document.addEventListener("keydown", (event) => {
        const target = KEYS[event.key];
        const button = target && document.getElementById(target);
        if (!button || event.altKey || event.ctrlKey || event.metaKey) { return; }
        const at = event.target;
        if (at && (at.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(at.tagName)
                   || (at.getAttribute && at.getAttribute("role") === "slider"))) {
            return;
        }
        event.preventDefault();
        if (at && at.tagName === "BUTTON") { at.blur(); }   // or space would press it too
        button.click();
    });
}());
