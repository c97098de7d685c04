"""The HTTP face: FastAPI over the one door.

`studiolo.faces.http.app.create_app` builds the application; `studiolo.faces.http.server`
runs it under uvicorn; `studiolo.faces.http.schemas` holds the wire shapes that the Python
client (`studiolo.client`) shares. This package module imports nothing heavy on purpose.
"""

__all__: list[str] = []
