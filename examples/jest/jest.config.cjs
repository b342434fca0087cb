/** Plain CommonJS tests need no transform: Jest loads them, and the sandbox, as Node does. */
module.exports = {
  testEnvironment: 'node',
  transform: {},
};
