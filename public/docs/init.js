// Renders the gateway's own openapi.yaml (same origin) with the Redoc bundle served beside this file.
/* global Redoc */
Redoc.init('/openapi.yaml', { hideDownloadButton: false, expandResponses: '200,202' }, document.getElementById('redoc'))
