"""The HTTP face: FastAPI over the one door.

`studiolo.faces.http.app.create_app` builds the application; `studiolo.faces.http.server`
runs it under uvicorn. The request and response models it validates with are the wire
package's (`studiolo.api`), shared with the Python client (`studiolo.client`). This package
module imports nothing heavy on purpose.
"""

__all__: list[str] = []
