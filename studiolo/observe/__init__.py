"""Operating the service: Prometheus metrics, JSON-line logs with request ids.

`observe.install` hooks all of it into an app at one place (the outermost middleware and the
store's hooks); the door knows only `observe.context.REQUEST_ID`, which it records in each
audit event it appends. The package imports nothing here, so that importing the context
(stdlib only) costs the door nothing: import the submodules.
"""
