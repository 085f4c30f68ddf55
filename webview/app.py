"""The web view's routes (Starlette): the page, its data, its stream and ``/metrics``.

Why Starlette: an ASGI application of plain routes, served by uvicorn
(webview/server.py); the page's assets are files of this package, so the view works
with no network beyond the machine's own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from webview import metrics as M
from webview.poller import Poller

STATIC = Path(__file__).resolve().parent / "static"
KEEPALIVE = 15.0  # seconds: a comment line on an idle stream, so proxies keep it open


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


def make_app(poller: Poller, *, tick: bool = True) -> Starlette:
    """The application over ``poller``; ``tick``: run the poller's task while serving."""
    model = poller.drawing.to_json()
    registry = M.registry(poller)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(poller.run()) if tick else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def index(_r: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def get_model(_r: Request) -> Response:
        return JSONResponse(model)

    async def get_state(_r: Request) -> Response:
        poller.touch()
        return JSONResponse(poller.page_state())

    async def get_switch(r: Request) -> Response:
        poller.touch()
        data = poller.switch(r.path_params["name"])
        if data is None:
            return JSONResponse({"error": f"no switch {r.path_params['name']!r} in the fabric"}, status_code=404)
        return JSONResponse(data)

    async def stream(r: Request) -> Response:
        async def events() -> AsyncIterator[str]:
            poller.touch()
            poller.streams += 1
            try:
                yield _sse(poller.latest)
                while not await r.is_disconnected():
                    changed = poller.changed
                    try:
                        await asyncio.wait_for(changed.wait(), KEEPALIVE)
                    except TimeoutError:
                        yield ": keepalive\n\n"
                        continue
                    yield _sse(poller.latest)
            finally:
                poller.streams -= 1
                poller.touch()

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def get_metrics(_r: Request) -> Response:
        await poller.fresh()
        return Response(M.exposition(registry), media_type=M.CONTENT_TYPE)

    return Starlette(routes=[
        Route("/", index),
        Route("/api/model", get_model),
        Route("/api/state", get_state),
        Route("/api/switch/{name}", get_switch),
        Route("/api/stream", stream),
        Route("/metrics", get_metrics),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ], lifespan=lifespan)
