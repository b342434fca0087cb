/**
 * Saves a file the dashboard fetched with the key (a label whose pre-signed link has expired, the
 * report as JUnit XML): routes that need the Bearer key cannot be plain links, so the file is read
 * first and handed to the browser's download as a blob.
 */
export async function saveFile(file: Promise<Blob>, name: string): Promise<void> {
  const url = URL.createObjectURL(await file);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  // The download has taken the blob by then; revoking at once can cancel it in some browsers.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
