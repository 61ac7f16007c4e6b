// Echo with Node's net module: every socket piped into itself (seed 000's candidate). pipe()
// pauses the reading side while the writing side is full, so a slow reader loses nothing.
'use strict';
const net = require('node:net');

const port = Number(process.argv[2]);
const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  // A client that resets its connection must not take the server down with it.
  socket.on('error', () => socket.destroy());
  socket.pipe(socket);
});
server.listen(port, '127.0.0.1');
