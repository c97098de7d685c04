"""The HTTP face over the one door.

`studiolo.api.operations` describes every operation; `studiolo.faces.http.app.create_app`
builds the application, whose operations take one path (`path.py`: one worker call each)
and whose OpenAPI document is generated from the table (`openapi.py`);
`studiolo.faces.http.server` runs it under uvicorn. The request and response models it
validates with are the wire package's (`studiolo.api`), shared with the Python client
(`studiolo.client`). This package module imports nothing heavy on purpose.
"""

__all__: list[str] = []
