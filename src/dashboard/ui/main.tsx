import './styles.css';
import { render } from 'preact';
import { App } from './app.js';
import { sessionStore } from './session.js';

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App store={sessionStore()} />, root);
}
