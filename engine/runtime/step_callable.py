"""Session.make_callable (TF1): one step signature resolved once (fetch structure, feed
tensors, plan key per graph version), so a repeated step pays only for converting its feeds,
running the plan and converting its fetches."""

from __future__ import annotations

from engine.runtime.fetches import FetchStructure, feed_value, resolve_feeds
from engine.runtime.session import check_run_arguments, plan_key


class StepCallable:
    """`callable(*feed_values, options=None, run_metadata=None)`: what
    `session.run(fetches, dict(zip(feed_list, feed_values)), options, run_metadata)` returns.
    A call with as many values as feed_list has keys takes the resolved path; any other count
    is zipped into a feed_dict for Session.run, as TF's callable does (a missing value then
    fails as a missing feed does)."""

    def __init__(self, session, fetches, feed_list=None, accept_options: bool = False):
        if feed_list is not None and not isinstance(feed_list, (list, tuple)):
            raise TypeError(f"Argument `feed_list` must be a list or tuple. Received: "
                            f"feed_list={feed_list}")
        if fetches is None:
            raise TypeError('Argument `fetch` = None has invalid type "NoneType". Cannot be '
                            'None')
        self._session = session
        self._fetches = fetches
        self._keys = list(feed_list or ())
        self._accept_options = accept_options
        self._structure = FetchStructure(session.graph, fetches)
        # A key given twice is fed once, with its last value, as a feed_dict would take it.
        last = {}
        for index, key in enumerate(self._keys):
            last[key] = index
        resolved = resolve_feeds(session.graph, {key: None for key in last})
        self._feeds = [(tensor, last[key]) for (tensor, _), key in zip(resolved, last)]
        self._key: tuple | None = None
        self._version = -1

    def __call__(self, *feed_values, options=None, run_metadata=None):
        if (options is not None or run_metadata is not None) and not self._accept_options \
                and not self._keys:
            raise TypeError("this callable was made without accept_options=True: it takes no "
                            "options or run_metadata")
        if options is not None or run_metadata is not None:
            check_run_arguments(options, run_metadata)
        session = self._session
        if len(feed_values) != len(self._keys):
            return session.run(self._fetches, dict(zip(self._keys, feed_values)), options,
                               run_metadata)
        structure = self._structure
        feeds = [(tensor, feed_values[index]) for tensor, index in self._feeds]
        if not structure.tensors and not structure.targets:
            for tensor, value in feeds:     # TF still checks the feeds, then runs nothing
                feed_value(tensor, value)
            return structure.rebuild([])
        version = session.graph.version
        if version != self._version:
            self._key, self._version = plan_key(structure, feeds, version), version
        return session.run_step(structure, feeds, options, run_metadata, self._key)
