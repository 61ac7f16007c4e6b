// The fixed response with Node's http module (keep-alive and pipelining are its own).
'use strict';
const http = require('node:http');

const port = Number(process.argv[2]);
const body = 'Hello, World!';
const server = http.createServer((request, response) => {
  // ringside's servers send no Date; Node adds its Connection and Keep-Alive headers itself.
  response.sendDate = false;
  response.writeHead(200, {
    'Server': 'ringside',
    'Content-Type': 'text/plain',
    'Content-Length': Buffer.byteLength(body),
  });
  response.end(body);
});
server.listen(port, '127.0.0.1');
