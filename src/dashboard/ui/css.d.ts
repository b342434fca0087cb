/** Style sheets the dashboard's scripts import: esbuild bundles them into a CSS file of their own. */
declare module '*.css';
